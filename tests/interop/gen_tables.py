#!/usr/bin/env python3
"""Write Delta tables with real writers (Delta-Spark, delta-rs) for dk's interop tests.

Usage: gen_tables.py OUTDIR [NAME ...]

Each table goes to OUTDIR/<name>/delta/ (the table root). OUTDIR/<name>/DONE marks a finished
table (generation is skipped when it exists; a half-written table is deleted and redone).
OUTDIR/<name>/gen.json records what the generator did (steps, controlled commit times).
The table list (with the filter queries the oracle dumper runs) is TABLES below.
"""
import datetime as dt
import json
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

GEN_FORMAT = 1


def q(path):
    return "delta.`%s`" % path


def sql(spark, text):
    return spark.sql(text)


# ---------------------------------------------------------------------------------------------
# generators: fn(spark, path) -> dict (extra info stored in gen.json)

def gen_appends(spark, path):
    """11 single-file appends; default checkpointInterval (10) -> classic checkpoint at v10."""
    for i in range(11):
        df = spark.range(i * 100, (i + 1) * 100, 1, 1).selectExpr(
            "id", "cast(id % 7 as int) as k", "concat('s', cast(id as string)) as s",
            "cast(id as double) * 1.5 as d")
        df.write.format("delta").mode("append").save(path)
    return {"steps": ["11 appends of 100 rows (1 file each)"]}


def gen_dml(spark, path):
    """copy-on-write DML without deletion vectors: DELETE, UPDATE, MERGE, overwrite, replaceWhere."""
    sql(spark, f"CREATE TABLE {q(path)} (id BIGINT, grp INT, s STRING, amount DECIMAL(12,2)) "
               "USING delta TBLPROPERTIES ('delta.enableDeletionVectors'='false')")
    spark.range(0, 400, 1, 4).selectExpr(
        "id", "cast(id % 4 as int) as grp", "concat('row-', cast(id as string)) as s",
        "cast(id * 1.25 as decimal(12,2)) as amount").write.format("delta").mode("append").save(path)
    sql(spark, f"DELETE FROM {q(path)} WHERE id % 10 = 0")
    sql(spark, f"UPDATE {q(path)} SET s = concat(s, '-upd'), amount = amount + 1 WHERE id < 50")
    spark.range(350, 450, 1, 1).selectExpr(
        "id", "cast(id % 4 as int) as grp", "concat('merge-', cast(id as string)) as s",
        "cast(id as decimal(12,2)) as amount").createOrReplaceTempView("dml_src")
    sql(spark, f"MERGE INTO {q(path)} t USING dml_src s ON t.id = s.id "
               "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    sql(spark, f"DELETE FROM {q(path)} WHERE grp = 3")
    spark.range(1000, 1200, 1, 2).selectExpr(
        "id", "cast(id % 4 as int) as grp", "concat('ovw-', cast(id as string)) as s",
        "cast(id / 3 as decimal(12,2)) as amount").write.format("delta").mode("overwrite").save(path)
    spark.range(1100, 1150, 1, 1).selectExpr(
        "id", "cast(id % 4 as int) as grp", "concat('rw-', cast(id as string)) as s",
        "cast(-id as decimal(12,2)) as amount").write.format("delta").mode("overwrite") \
        .option("replaceWhere", "id >= 1100 AND id < 1150").save(path)
    sql(spark, f"INSERT INTO {q(path)} VALUES (5000, NULL, NULL, NULL), (5001, 1, '', 0.00)")
    return {"steps": ["create", "append 400", "delete id%10=0", "update id<50", "merge 350..449",
                      "delete grp=3", "overwrite 1000..1199", "replaceWhere 1100..1149",
                      "insert nulls"]}


SPECIAL_STRINGS = ["plain", "a b", "a/b", "a=b", "a%b", "ü→ñ 中文", "x:y", "#{}[]", "'quote\"",
                   "tab\there", "", None]


def gen_partitioned(spark, path):
    """partitioned by string/int/date/timestamp/boolean/decimal with nulls and special chars."""
    from decimal import Decimal
    from pyspark.sql.types import (StructType, StructField, LongType, StringType, IntegerType,
                                   DateType, TimestampType, BooleanType, DecimalType)
    schema = StructType([
        StructField("id", LongType()), StructField("v", StringType()),
        StructField("p_str", StringType()), StructField("p_int", IntegerType()),
        StructField("p_date", DateType()), StructField("p_ts", TimestampType()),
        StructField("p_bool", BooleanType()), StructField("p_dec", DecimalType(10, 2))])
    utc = dt.timezone.utc
    ints = [0, 1, -7, 2147483647, None]
    dates = [dt.date(2024, 2, 29), dt.date(1970, 1, 1), dt.date(1900, 12, 31), None]
    tss = [dt.datetime(2024, 3, 10, 12, 34, 56, 789012, tzinfo=utc),
           dt.datetime(1970, 1, 1, 0, 0, 0, tzinfo=utc),
           dt.datetime(2000, 6, 1, 23, 59, 59, tzinfo=utc), None]
    bools = [True, False, None]
    decs = [Decimal("0.00"), Decimal("-12345678.90"), Decimal("3.14"), None]

    def rows(start, n):
        out = []
        for i in range(start, start + n):
            out.append((i, "v%d" % i, SPECIAL_STRINGS[i % len(SPECIAL_STRINGS)],
                        ints[i % len(ints)], dates[i % len(dates)], tss[(i // 3) % len(tss)],
                        bools[i % len(bools)], decs[(i // 2) % len(decs)]))
        return out

    parts = ["p_str", "p_int", "p_date", "p_ts", "p_bool", "p_dec"]
    spark.createDataFrame(rows(0, 60), schema).coalesce(1).write.format("delta") \
        .partitionBy(*parts).mode("append").save(path)
    spark.createDataFrame(rows(60, 40), schema).coalesce(1).write.format("delta") \
        .partitionBy(*parts).mode("append").save(path)
    sql(spark, f"DELETE FROM {q(path)} WHERE p_int = 1")
    sql(spark, f"DELETE FROM {q(path)} WHERE p_str IS NULL AND p_bool")
    spark.createDataFrame(rows(100, 24), schema).coalesce(1).write.format("delta") \
        .partitionBy(*parts).mode("append").save(path)
    return {"steps": ["append 60", "append 40", "delete p_int=1 (metadata-only)",
                      "delete p_str is null and p_bool", "append 24"]}


def _append_range(spark, path, lo, hi, nfiles):
    spark.range(lo, hi, 1, nfiles).selectExpr(
        "id", "cast(id % 5 as int) as part", "concat('x', cast(id as string)) as s") \
        .write.format("delta").mode("append").save(path)


def gen_ckpt_classic(spark, path):
    sql(spark, f"CREATE TABLE {q(path)} (id BIGINT, part INT, s STRING) USING delta "
               "TBLPROPERTIES ('delta.checkpointInterval'='3')")
    for i in range(5):
        _append_range(spark, path, i * 50, (i + 1) * 50, 1)
        if i == 2:
            sql(spark, f"DELETE FROM {q(path)} WHERE id % 13 = {i}")
    return {"steps": ["checkpointInterval=3 (checkpoints at v3, v6)", "5 appends",
                      "delete after the 3rd"]}


def _with_conf(spark, conf, fn):
    old = {k: spark.conf.get(k, None) for k in conf}
    for k, v in conf.items():
        spark.conf.set(k, v)
    try:
        return fn()
    finally:
        for k, v in old.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def gen_ckpt_multipart(spark, path):
    def run():
        sql(spark, f"CREATE TABLE {q(path)} (id BIGINT, part INT, s STRING) USING delta "
                   "PARTITIONED BY (part) TBLPROPERTIES ('delta.checkpointInterval'='5')")
        for i in range(5):
            _append_range(spark, path, i * 40, (i + 1) * 40, 2)
            if i == 3:
                sql(spark, f"DELETE FROM {q(path)} WHERE part = 4")
    _with_conf(spark, {"spark.databricks.delta.checkpoint.partSize": "10"}, run)
    return {"steps": ["checkpoint.partSize=10, checkpointInterval=5 (multi-part at v5)",
                      "4 partitioned appends", "delete part=4", "append"]}


def _gen_ckpt_v2(spark, path, fmt):
    def run():
        sql(spark, f"CREATE TABLE {q(path)} (id BIGINT, part INT, s STRING) USING delta "
                   "TBLPROPERTIES ('delta.checkpointPolicy'='v2', 'delta.checkpointInterval'='3')")
        for i in range(5):
            _append_range(spark, path, i * 30, (i + 1) * 30, 2)
            if i == 3:
                sql(spark, f"DELETE FROM {q(path)} WHERE id % 7 = 0")
    _with_conf(spark, {"spark.databricks.delta.checkpoint.partSize": "4",
                       "spark.databricks.delta.checkpointV2.topLevelFileFormat": fmt}, run)
    return {"steps": [f"checkpointPolicy=v2, top-level {fmt}, partSize=4 (sidecars), "
                      "interval 3 (checkpoints at v3, v6)", "5 appends, delete after the 4th"]}


def gen_ckpt_v2_parquet(spark, path):
    return _gen_ckpt_v2(spark, path, "parquet")


def gen_ckpt_v2_json(spark, path):
    return _gen_ckpt_v2(spark, path, "json")


def _gen_colmap(spark, path, mode):
    sql(spark, f"CREATE TABLE {q(path)} (id BIGINT, a STRING, b INT, c DOUBLE, "
               "st STRUCT<x: INT, y: STRING>, p STRING) USING delta PARTITIONED BY (p) "
               f"TBLPROPERTIES ('delta.columnMapping.mode'='{mode}', "
               "'delta.minReaderVersion'='2', 'delta.minWriterVersion'='5')")
    sql(spark, f"INSERT INTO {q(path)} SELECT id, concat('a', id), cast(id * 2 as int), id / 4.0, "
               "named_struct('x', cast(id as int), 'y', concat('y', id)), "
               "CASE WHEN id % 3 = 0 THEN 'p one' WHEN id % 3 = 1 THEN 'p=two' ELSE NULL END "
               "FROM range(0, 60)")
    sql(spark, f"ALTER TABLE {q(path)} RENAME COLUMN b TO b_renamed")
    sql(spark, f"ALTER TABLE {q(path)} RENAME COLUMN st.y TO y_renamed")
    sql(spark, f"ALTER TABLE {q(path)} DROP COLUMN c")
    sql(spark, f"ALTER TABLE {q(path)} ADD COLUMNS (c STRING)")
    sql(spark, f"INSERT INTO {q(path)} (id, a, b_renamed, st, p, c) SELECT id, concat('a', id), "
               "cast(id * 2 as int), named_struct('x', cast(id as int), 'y_renamed', 'new'), "
               "'p one', concat('new c ', id) FROM range(60, 90)")
    sql(spark, f"ALTER TABLE {q(path)} RENAME COLUMN p TO p_renamed")
    sql(spark, f"DELETE FROM {q(path)} WHERE id % 9 = 0")
    return {"steps": [f"columnMapping.mode={mode}", "insert 60", "rename b", "rename st.y",
                      "drop c", "add c (same name, new id)", "insert 30", "rename partition p",
                      "delete id%9=0"]}


def gen_colmap_name(spark, path):
    return _gen_colmap(spark, path, "name")


def gen_colmap_id(spark, path):
    return _gen_colmap(spark, path, "id")


def gen_dv(spark, path):
    sql(spark, f"CREATE TABLE {q(path)} (id BIGINT, part INT, s STRING) USING delta "
               "PARTITIONED BY (part) TBLPROPERTIES ('delta.enableDeletionVectors'='true', "
               "'delta.checkpointInterval'='4')")
    spark.range(0, 1000, 1, 2).selectExpr(
        "id", "cast(id % 2 as int) as part", "concat('s', cast(id as string)) as s") \
        .write.format("delta").mode("append").save(path)
    sql(spark, f"DELETE FROM {q(path)} WHERE id % 3 = 0")
    sql(spark, f"DELETE FROM {q(path)} WHERE id BETWEEN 100 AND 120")
    sql(spark, f"UPDATE {q(path)} SET s = 'updated' WHERE id BETWEEN 500 AND 510")
    _append_range(spark, path, 1000, 1100, 1)
    sql(spark, f"DELETE FROM {q(path)} WHERE id = 1001")
    sql(spark, f"DELETE FROM {q(path)} WHERE part = 1 AND id > 900")
    return {"steps": ["DVs enabled, partitioned", "append 1000", "delete id%3=0",
                      "delete 100..120", "update 500..510", "append 1000..1099",
                      "delete 1001", "delete part=1 and id>900 (checkpoint at v4)"]}


def gen_row_tracking(spark, path):
    sql(spark, f"CREATE TABLE {q(path)} (id BIGINT, s STRING) USING delta "
               "TBLPROPERTIES ('delta.enableRowTracking'='true', "
               "'delta.enableDeletionVectors'='false')")
    spark.range(0, 100, 1, 2).selectExpr("id", "concat('s', cast(id as string)) as s") \
        .write.format("delta").mode("append").save(path)
    spark.range(100, 150, 1, 1).selectExpr("id", "concat('s', cast(id as string)) as s") \
        .write.format("delta").mode("append").save(path)
    sql(spark, f"UPDATE {q(path)} SET s = 'upd' WHERE id % 10 = 1")
    sql(spark, f"DELETE FROM {q(path)} WHERE id % 10 = 2")
    spark.range(150, 170, 1, 1).selectExpr("id", "concat('s', cast(id as string)) as s") \
        .write.format("delta").mode("append").save(path)
    return {"steps": ["row tracking", "append 100 (2 files)", "append 50", "update id%10=1",
                      "delete id%10=2", "append 20"]}


def gen_row_tracking_dv(spark, path):
    sql(spark, f"CREATE TABLE {q(path)} (id BIGINT, s STRING) USING delta "
               "TBLPROPERTIES ('delta.enableRowTracking'='true', "
               "'delta.enableDeletionVectors'='true')")
    spark.range(0, 200, 1, 2).selectExpr("id", "concat('s', cast(id as string)) as s") \
        .write.format("delta").mode("append").save(path)
    sql(spark, f"UPDATE {q(path)} SET s = 'upd' WHERE id % 10 = 1")
    sql(spark, f"DELETE FROM {q(path)} WHERE id % 10 = 2")
    return {"steps": ["row tracking + DVs", "append 200", "update id%10=1", "delete id%10=2"]}


# Controlled commit times for timestamp time travel (ms since epoch, UTC).
TT_BASE_MS = 1704067200000  # 2024-01-01T00:00:00Z
TT_STEP_MS = 3600 * 1000    # commits one hour apart
# Spark refuses time travel beyond deletedFileRetentionDuration (default 7 days before now).
TT_PROPS = ("'delta.deletedFileRetentionDuration'='interval 36500 days', "
            "'delta.logRetentionDuration'='interval 36500 days'")


def _tt_commits(spark, path, n):
    for v in range(n):
        spark.range(v * 10, v * 10 + 10, 1, 1).selectExpr("id", f"{v} as commit_idx") \
            .write.format("delta").mode("append").save(path)


def gen_tt_mtime(spark, path):
    """Commit-file mtimes set to TT_BASE_MS + v * TT_STEP_MS (Spark uses file mtimes without ICT)."""
    sql(spark, f"CREATE TABLE {q(path)} (id BIGINT, commit_idx INT) USING delta "
               f"TBLPROPERTIES ('delta.enableInCommitTimestamps'='false', {TT_PROPS})")
    _tt_commits(spark, path, 5)  # versions 1..5 (v0 = create)
    log = os.path.join(path, "_delta_log")
    times = {}
    for name in sorted(os.listdir(log)):
        if name.endswith(".json") and name[:20].isdigit():
            v = int(name[:20])
            ms = TT_BASE_MS + v * TT_STEP_MS
            os.utime(os.path.join(log, name), ns=(ms * 1000000, ms * 1000000))
            times[str(v)] = ms
    return {"steps": ["create (v0)", "5 appends; commit_idx = version - 1"],
            "commit_mtimes_ms": times}


def gen_ict(spark, path):
    sql(spark, f"CREATE TABLE {q(path)} (id BIGINT, commit_idx INT) USING delta "
               f"TBLPROPERTIES ('delta.enableInCommitTimestamps'='true', {TT_PROPS})")
    _tt_commits(spark, path, 4)
    # mtimes deliberately scrambled: with ICT the commit timestamps must come from the log.
    log = os.path.join(path, "_delta_log")
    for name in os.listdir(log):
        if name.endswith(".json") and name[:20].isdigit():
            os.utime(os.path.join(log, name), ns=(TT_BASE_MS * 1000000,) * 2)
    return {"steps": ["ICT enabled at create", "4 appends", "commit mtimes all set to 2024-01-01"]}


def gen_ict_enabled_later(spark, path):
    sql(spark, f"CREATE TABLE {q(path)} (id BIGINT, commit_idx INT) USING delta "
               f"TBLPROPERTIES ('delta.enableInCommitTimestamps'='false', {TT_PROPS})")
    _tt_commits(spark, path, 2)
    sql(spark, f"ALTER TABLE {q(path)} SET TBLPROPERTIES ('delta.enableInCommitTimestamps'='true')")
    spark.range(100, 110, 1, 1).selectExpr("id", "9 as commit_idx") \
        .write.format("delta").mode("append").save(path)
    return {"steps": ["no ICT", "2 appends", "enable ICT (enablement version/timestamp props)",
                      "append"]}


def gen_type_widening(spark, path):
    sql(spark, f"CREATE TABLE {q(path)} (id BIGINT, b TINYINT, sh SMALLINT, i INT, f FLOAT, "
               "dec DECIMAL(5,2), d DATE) USING delta "
               "TBLPROPERTIES ('delta.enableTypeWidening'='true')")
    sql(spark, f"INSERT INTO {q(path)} VALUES (1, 127, 32767, 2147483647, 1.5, 123.45, "
               "DATE'2024-01-02'), (2, -128, -32768, -2147483648, -0.25, -999.99, NULL)")
    sql(spark, f"ALTER TABLE {q(path)} CHANGE COLUMN b TYPE INT")
    sql(spark, f"ALTER TABLE {q(path)} CHANGE COLUMN sh TYPE BIGINT")
    sql(spark, f"ALTER TABLE {q(path)} CHANGE COLUMN i TYPE BIGINT")
    sql(spark, f"ALTER TABLE {q(path)} CHANGE COLUMN f TYPE DOUBLE")
    sql(spark, f"ALTER TABLE {q(path)} CHANGE COLUMN dec TYPE DECIMAL(10,4)")
    try:
        sql(spark, f"ALTER TABLE {q(path)} CHANGE COLUMN d TYPE TIMESTAMP_NTZ")
        d_widened = True
    except Exception:  # noqa: BLE001 - not supported by this Delta version
        d_widened = False
    d_val = "TIMESTAMP_NTZ'2025-05-06 07:08:09'" if d_widened else "DATE'2025-05-06'"
    sql(spark, f"INSERT INTO {q(path)} VALUES (3, 100000, 9000000000, 9000000000, 0.1, "
               f"123456.7891, {d_val})")
    return {"steps": ["insert 2 narrow rows", "widen b->int, sh->bigint, i->bigint, "
                      "f->double, dec(5,2)->dec(10,4)" + (", d date->timestamp_ntz"
                                                          if d_widened else ""), "insert 1"],
            "date_to_timestamp_ntz": d_widened}


def gen_all_types(spark, path):
    sql(spark, f"CREATE TABLE {q(path)} (id INT, by TINYINT, sh SMALLINT, i INT, l BIGINT, "
               "f FLOAT, d DOUBLE, dec38 DECIMAL(38,18), dec9 DECIMAL(9,3), s STRING, bin BINARY, "
               "bo BOOLEAN, da DATE, ts TIMESTAMP, ntz TIMESTAMP_NTZ, "
               "st STRUCT<a: INT, b: STRUCT<c: STRING>>, arr ARRAY<INT>, "
               "m MAP<STRING, DOUBLE>) USING delta")
    sql(spark, f"INSERT INTO {q(path)} SELECT cast(id as int), cast(id % 128 as tinyint), "
               "cast(id * 3 - 500 as smallint), cast(id * 1000003 % 2147483647 as int), "
               "id * 1099511627776, cast(id / 7.0 as float), id / 3.0, "
               "cast(id * 12345.678901234567 as decimal(38,18)), cast(id * 1.5 - 300 as decimal(9,3)), "
               "concat('str-', cast(id as string), repeat('é', cast(id % 4 as int))), "
               "cast(concat('b', cast(id as string)) as binary), id % 2 = 0, "
               "date_add(DATE'1999-12-30', cast(id * 37 as int)), "
               "timestamp_micros(946684800000000 + id * 86400123457), "
               "cast(timestamp_micros(946684800000000 + id * 3600000001) as timestamp_ntz), "
               "named_struct('a', cast(id as int), 'b', named_struct('c', concat('c', cast(id as string)))), "
               "array(cast(id as int), cast(id + 1 as int), NULL), "
               "map(concat('k', cast(id % 3 as string)), id / 2.0, 'z', -0.5) "
               "FROM range(0, 300, 1, 2)")
    sql(spark, f"INSERT INTO {q(path)} VALUES (1000, 127, 32767, 2147483647, 9223372036854775807, "
               "float('NaN'), double('-Infinity'), 99999999999999999999.999999999999999999, "
               "-999999.999, '', X'00FF', true, DATE'0001-01-01', TIMESTAMP'9999-12-31 23:59:59.999999', "
               "TIMESTAMP_NTZ'1900-01-01 00:00:00.000001', NULL, array(), map()), "
               "(1001, -128, -32768, -2147483648, -9223372036854775808, float('-0.0'), double('NaN'), "
               "-0.000000000000000001, 0.001, 'line\\nbreak \"q\" \\\\ back', X'', false, "
               "DATE'9999-12-31', TIMESTAMP'1969-12-31 23:59:59.999999', NULL, "
               "named_struct('a', NULL, 'b', NULL), NULL, NULL), "
               "(1002, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
               "NULL, NULL, NULL, NULL)")
    return {"steps": ["insert 300 computed rows (2 files)", "insert 3 edge rows"]}


def gen_deltars(spark, path):
    """Written by delta-rs (deltalake Python), not by Spark."""
    import pyarrow as pa
    from deltalake import write_deltalake, DeltaTable

    def batch(lo, hi):
        ids = list(range(lo, hi))
        return pa.table({
            "id": pa.array(ids, pa.int64()),
            "name": pa.array(["n%d" % i if i % 11 else None for i in ids], pa.string()),
            "val": pa.array([i * 0.5 for i in ids], pa.float64()),
            "cat": pa.array([["red", "green", "blue ü"][i % 3] for i in ids], pa.string()),
            "day": pa.array([dt.date(2024, 1, 1 + i % 28) for i in ids], pa.date32()),
        })
    write_deltalake(path, batch(0, 100), partition_by=["cat"], mode="append")
    write_deltalake(path, batch(100, 250), partition_by=["cat"], mode="append")
    DeltaTable(path).delete("id % 5 = 0")
    DeltaTable(path).update(predicate="cat = 'red'", updates={"name": "'updated'"})
    write_deltalake(path, batch(250, 300), partition_by=["cat"], mode="append")
    DeltaTable(path).create_checkpoint()
    write_deltalake(path, batch(300, 320), partition_by=["cat"], mode="append")
    return {"steps": ["delta-rs append 100", "append 150", "delete id%5=0", "update cat=red",
                      "append 50", "checkpoint", "append 20"]}


# ---------------------------------------------------------------------------------------------
# Table list. filters: (name, SQL predicate) run by dump_oracle.py on the latest version.

COMMON_NUM_FILTERS = [
    ("data_eq", "id = 42"), ("data_range", "id >= 100 AND id < 250"),
    ("data_or", "id < 10 OR id > 1300"), ("data_not_in", "NOT (id IN (1, 2, 3)) AND id < 20"),
    ("none_match", "id < -5"),
]

TABLES = [
    {"name": "appends", "gen": gen_appends, "filters": COMMON_NUM_FILTERS + [
        ("data_and_str", "k = 3 AND s LIKE 's1%'"), ("data_double", "d > 1000.0 AND d <= 1500.0")]},
    {"name": "dml", "gen": gen_dml, "filters": COMMON_NUM_FILTERS + [
        ("nulls", "grp IS NULL"), ("str_eq", "s = 'rw-1120'"), ("empty_str", "s = ''"),
        ("decimal", "amount < 0 AND amount > -1120"), ("in", "grp IN (0, 2)")]},
    {"name": "partitioned", "gen": gen_partitioned, "filters": [
        ("part_str_eq", "p_str = 'a b'"), ("part_str_special", "p_str IN ('a/b', 'a=b', 'a%b', 'ü→ñ 中文')"),
        ("part_str_null", "p_str IS NULL"), ("part_int", "p_int = -7"),
        ("part_int_null", "p_int IS NULL"), ("part_date", "p_date = DATE'2024-02-29'"),
        ("part_date_range", "p_date < DATE'1971-01-01'"),
        ("part_ts", "p_ts = TIMESTAMP'2024-03-10 12:34:56.789012'"),
        ("part_ts_range", "p_ts > TIMESTAMP'1999-01-01 00:00:00'"),
        ("part_bool", "p_bool"), ("part_bool_not", "NOT p_bool"),
        ("part_dec", "p_dec = 3.14"), ("part_dec_neg", "p_dec < 0"),
        ("mixed", "p_int = 0 AND id > 50"), ("mixed_or", "p_bool = false OR id = 3"),
        ("data_only", "v = 'v77'"), ("not_in_parts", "p_int NOT IN (0, -7)")]},
    {"name": "ckpt_classic", "gen": gen_ckpt_classic, "filters": COMMON_NUM_FILTERS},
    {"name": "ckpt_multipart", "gen": gen_ckpt_multipart, "filters": COMMON_NUM_FILTERS + [
        ("part", "part = 2"), ("part_mixed", "part = 1 AND id > 300")]},
    {"name": "ckpt_v2_parquet", "gen": gen_ckpt_v2_parquet, "filters": COMMON_NUM_FILTERS},
    {"name": "ckpt_v2_json", "gen": gen_ckpt_v2_json, "filters": COMMON_NUM_FILTERS},
    {"name": "colmap_name", "gen": gen_colmap_name, "filters": [
        ("renamed_col", "b_renamed > 100"), ("nested_renamed", "st.y_renamed = 'new'"),
        ("readded_col", "c IS NOT NULL"), ("part_renamed", "p_renamed = 'p=two'"),
        ("part_null", "p_renamed IS NULL")]},
    {"name": "colmap_id", "gen": gen_colmap_id, "filters": [
        ("renamed_col", "b_renamed > 100"), ("nested_renamed", "st.y_renamed = 'new'"),
        ("readded_col", "c IS NOT NULL"), ("part_renamed", "p_renamed = 'p=two'"),
        ("part_null", "p_renamed IS NULL")]},
    {"name": "dv", "gen": gen_dv, "filters": COMMON_NUM_FILTERS + [
        ("part", "part = 0"), ("str", "s = 'updated'")]},
    {"name": "row_tracking", "gen": gen_row_tracking, "row_tracking": True,
     "filters": [("data_eq", "id = 41"), ("str", "s = 'upd'")]},
    {"name": "row_tracking_dv", "gen": gen_row_tracking_dv, "row_tracking": True,
     "filters": [("data_eq", "id = 41"), ("str", "s = 'upd'")]},
    {"name": "tt_mtime", "gen": gen_tt_mtime, "time_travel": True, "filters": []},
    {"name": "ict", "gen": gen_ict, "time_travel": True, "filters": []},
    {"name": "ict_enabled_later", "gen": gen_ict_enabled_later, "time_travel": True, "filters": []},
    {"name": "type_widening", "gen": gen_type_widening, "filters": [
        ("widened_int", "i > 2147483647"), ("widened_dec", "dec > 1000")]},
    {"name": "all_types", "gen": gen_all_types, "filters": [
        ("int_eq", "i = 2147483647"), ("byte", "by < 0"), ("long_big", "l > 300000000000000"),
        ("float", "f > 10.5"), ("double_nan", "isnan(d)"), ("dec38", "dec38 > 3000000"),
        ("dec9", "dec9 BETWEEN -10 AND 10"), ("str_prefix", "s LIKE 'str-1%'"),
        ("str_range", "s >= 'str-2' AND s < 'str-3'"), ("bin", "bin = X'00FF'"),
        ("bool", "bo"), ("date", "da > DATE'2020-01-01'"),
        ("ts", "ts < TIMESTAMP'2001-01-01 00:00:00'"),
        ("ntz", "ntz >= TIMESTAMP_NTZ'2000-01-05 00:00:00'"), ("nested", "st.a = 7"),
        ("is_null", "s IS NULL"), ("or_not", "NOT (id < 290) OR by IS NULL")]},
    {"name": "deltars", "gen": gen_deltars, "filters": [
        ("part", "cat = 'blue ü'"), ("data", "id BETWEEN 40 AND 60"),
        ("name_null", "name IS NULL"), ("mixed", "cat = 'red' AND day = DATE'2024-01-05'")]},
]


def table_names():
    return [t["name"] for t in TABLES]


def generate(spark, outdir, names=None, log=print):
    os.makedirs(outdir, exist_ok=True)
    timings = {}
    for t in TABLES:
        name = t["name"]
        if names and name not in names:
            continue
        tdir = os.path.join(outdir, name)
        if os.path.exists(os.path.join(tdir, "DONE")):
            continue
        if os.path.exists(tdir):
            shutil.rmtree(tdir)
        os.makedirs(tdir)
        path = os.path.join(tdir, "delta")
        t0 = time.time()
        info = t["gen"](spark, path) or {}
        info.update({"format": GEN_FORMAT, "name": name, "table_root": "delta"})
        with open(os.path.join(tdir, "gen.json"), "w") as f:
            json.dump(info, f, indent=1, sort_keys=True)
        with open(os.path.join(tdir, "DONE"), "w") as f:
            f.write("ok\n")
        timings[name] = round(time.time() - t0, 2)
        log(f"gen {name}: {timings[name]}s")
    return timings


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    from sparkenv import get_spark
    t0 = time.time()
    spark = get_spark("dk-interop-gen")
    generate(spark, os.path.abspath(argv[1]), set(argv[2:]) or None)
    print(f"gen total {time.time() - t0:.1f}s")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
