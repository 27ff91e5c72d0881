"""Batch writes through the connector (DkWriteBuilder / WritePlan / DkDataWriter), checked
against delta-spark: every write is done through format("dk") (or the dk catalog) on one table
and through format("delta") on another from the same data; at every version both tables read
the same through dk, through delta-spark and through delta-rs, and delta-spark appends to the
dk-written table."""
import json
import os

import pytest
from pyspark.sql import functions as F

from sparkcmp import diff, rows

COLS = ("id bigint, i int, p string, x double, d decimal(10,2), dt date, ts timestamp, "
        "b boolean, bin binary, arr array<int>, st struct<a: int, s: string>, m map<string, bigint>")


def data(spark, lo, hi, parts=("a", "b", "c", None)):
    """Rows lo..hi-1 of every column type; p cycles through `parts` (None = null)."""
    plist = ", ".join("NULL" if v is None else f"'{v}'" for v in parts)
    return spark.range(lo, hi).selectExpr(
        "id",
        "cast(if(id % 7 = 0, NULL, id * 3) as int) as i",
        f"element_at(array({plist}), cast(id % {len(parts)} as int) + 1) as p",
        "if(id % 11 = 0, NULL, id / 4.0D) as x",
        "cast(id * 1.25 as decimal(10,2)) as d",
        "date_add(DATE'2024-01-01', cast(id % 400 as int)) as dt",
        "timestamp_micros(1700000000000000 + id * 1000003) as ts",
        "id % 2 = 0 as b",
        "if(id % 5 = 0, NULL, cast(concat('b', id) as binary)) as bin",
        "if(id % 6 = 0, NULL, array(cast(id as int), NULL, 7)) as arr",
        "named_struct('a', cast(id % 13 as int), 's', concat('s', id)) as st",
        "map(concat('k', id % 3), id) as m",
    )


def latest_version(spark, path):
    log = os.path.join(path, "_delta_log")
    return max(int(f[:20]) for f in os.listdir(log) if f.endswith(".json") and f[:20].isdigit())


def arrow_rows(t):
    return sorted(repr(sorted(r.items())) for r in t.to_pylist())


FULL = os.environ.get("DK_SPARK_WRITE_FULL") == "1"


def check_same(spark, dk_path, delta_path, what, checked=None):
    """Both tables read the same at every version (but those in `checked`: versions do not
    change, so a test checks each once) through dk and delta-rs, and at the latest version
    through delta-spark (every version with DK_SPARK_WRITE_FULL=1: delta-spark's time travel
    costs seconds a version here)."""
    import deltalake

    n = latest_version(spark, delta_path)
    assert latest_version(spark, dk_path) == n, f"{what}: versions differ"
    checked = set() if checked is None else checked
    for v in range(n + 1):
        if v in checked:
            continue
        checked.add(v)
        for fmt in ("dk", "delta") if FULL or v == n else ("dk",):
            a = spark.read.format(fmt).option("versionAsOf", v).load(dk_path)
            b = spark.read.format(fmt).option("versionAsOf", v).load(delta_path)
            if fmt == "delta" and v == n:
                a, b = spark.read.format(fmt).load(dk_path), spark.read.format(fmt).load(delta_path)
            assert a.schema == b.schema, f"{what} v{v} via {fmt}: {a.schema} vs {b.schema}"
            diff(rows(a), rows(b), f"{what} v{v} via {fmt}")
        a = deltalake.DeltaTable(dk_path, version=v).to_pyarrow_table()
        b = deltalake.DeltaTable(delta_path, version=v).to_pyarrow_table()
        assert a.schema == b.schema, f"{what} v{v} via delta-rs"
        assert arrow_rows(a) == arrow_rows(b), f"{what} v{v} via delta-rs"


def both(tmp_path, name):
    return str(tmp_path / f"{name}_dk"), str(tmp_path / f"{name}_delta")


def commit_info(path, v):
    with open(os.path.join(path, "_delta_log", f"{v:020d}.json")) as f:
        for line in f:
            a = json.loads(line)
            if "commitInfo" in a:
                return a["commitInfo"]


def test_write_modes_match_delta(spark, tmp_path):
    dk, de = both(tmp_path, "modes")
    seen = set()

    def w(df, fmt, path, mode, **opts):
        wr = df.write.format(fmt).mode(mode)
        for k, v in opts.items():
            wr = wr.option(k, v)
        if not os.path.exists(path):
            wr = wr.partitionBy("p")
        wr.save(path)

    steps = [
        ("create", lambda: data(spark, 0, 300), "append", {}),
        ("append", lambda: data(spark, 300, 500), "append", {"userMetadata": "second"}),
        ("replaceWhere", lambda: data(spark, 1000, 1100, ("b",)), "overwrite",
         {"replaceWhere": "p = 'b'"}),
        ("dynamic", lambda: data(spark, 2000, 2050, ("a", None)), "overwrite",
         {"partitionOverwriteMode": "dynamic"}),
        ("overwrite", lambda: data(spark, 3000, 3200), "overwrite", {}),
    ]
    for what, make, mode, opts in steps:
        df = make()
        w(df, "dk", dk, mode, **opts)
        w(df, "delta", de, mode, **opts)
        check_same(spark, dk, de, what, seen)
    ci = commit_info(dk, 1)
    assert ci["operation"] == "WRITE" and ci["userMetadata"] == "second"
    assert ci["operationParameters"]["mode"] == "Append"
    assert json.loads(ci["operationParameters"]["partitionBy"]) == ["p"]
    assert commit_info(dk, 2)["operationParameters"]["predicate"] == commit_info(de, 2)[
        "operationParameters"]["predicate"]
    assert commit_info(dk, 3)["operationParameters"]["isDynamicPartitionOverwrite"] == "true"
    assert int(commit_info(dk, 4)["operationMetrics"]["numOutputRows"]) == 200

    # delta-spark appends to the dk-written table (and to its own): still the same
    df = data(spark, 5000, 5100)
    df.write.format("delta").mode("append").save(dk)
    df.write.format("delta").mode("append").save(de)
    check_same(spark, dk, de, "delta-spark append", seen)


def test_sql_inserts_match_delta(spark, tmp_path):
    dk, de = both(tmp_path, "sql")
    data(spark, 0, 100).write.format("dk").mode("append").partitionBy("p").save(dk)
    data(spark, 0, 100).write.format("delta").mode("append").partitionBy("p").save(de)
    data(spark, 100, 150).createOrReplaceTempView("src_a")
    data(spark, 200, 230, ("c",)).createOrReplaceTempView("src_c")
    cols = "id, i, p, x, d, dt, ts, b, bin, arr, st, m"
    for cat, path in (("dk", dk), ("delta", de)):
        spark.sql(f"INSERT INTO {cat}.`{path}` SELECT {cols} FROM src_a")
        spark.sql(f"INSERT INTO {cat}.`{path}` REPLACE WHERE p = 'c' SELECT {cols} FROM src_c")
        data(spark, 300, 320, ("a",)).writeTo(f"{cat}.`{path}`").overwrite(F.col("p") == "a")
        data(spark, 400, 410).writeTo(f"{cat}.`{path}`").append()
    seen = set()
    check_same(spark, dk, de, "sql", seen)
    with _conf(spark, "spark.sql.sources.partitionOverwriteMode", "dynamic"):
        for cat, path in (("dk", dk), ("delta", de)):
            spark.sql(f"INSERT OVERWRITE {cat}.`{path}` SELECT {cols} FROM src_c")
    check_same(spark, dk, de, "insert overwrite dynamic", seen)
    for cat, path in (("dk", dk), ("delta", de)):
        spark.sql(f"INSERT OVERWRITE {cat}.`{path}` SELECT {cols} FROM src_a")
    check_same(spark, dk, de, "insert overwrite", seen)


class _conf:
    def __init__(self, spark, k, v):
        self.spark, self.k, self.v = spark, k, v

    def __enter__(self):
        self.old = self.spark.conf.get(self.k, None)
        self.spark.conf.set(self.k, self.v)

    def __exit__(self, *a):
        if self.old is None:
            self.spark.conf.unset(self.k)
        else:
            self.spark.conf.set(self.k, self.old)


def test_schema_evolution_matches_delta(spark, tmp_path):
    dk, de = both(tmp_path, "evo")
    base = data(spark, 0, 50).select("id", "p", "x")
    wider = data(spark, 50, 80).select("id", "p", "x", "i", "st")
    narrow = data(spark, 80, 90).select("p", "id")
    for fmt, path in (("dk", dk), ("delta", de)):
        base.write.format(fmt).mode("append").partitionBy("p").save(path)
        wider.write.format(fmt).mode("append").option("mergeSchema", "true").save(path)
        narrow.write.format(fmt).mode("append").option("mergeSchema", "true").save(path)
    seen = set()
    check_same(spark, dk, de, "mergeSchema", seen)
    # without mergeSchema an extra column is refused and the table stays as it was
    with pytest.raises(Exception):
        data(spark, 0, 5).select("id", "p", "x", "b").write.format("dk").mode("append").save(dk)
    check_same(spark, dk, de, "refused", seen)
    other = data(spark, 100, 120).select("p", F.col("id").cast("string").alias("id"), "b")
    for fmt, path in (("dk", dk), ("delta", de)):
        other.write.format(fmt).mode("overwrite").option("overwriteSchema", "true").save(path)
    check_same(spark, dk, de, "overwriteSchema", seen)


def test_idempotent_writes_match_delta(spark, tmp_path):
    dk, de = both(tmp_path, "txn")
    for fmt, path in (("dk", dk), ("delta", de)):
        data(spark, 0, 10).write.format(fmt).mode("append").save(path)
        for ver, lo in ((1, 10), (1, 20), (0, 30), (2, 40)):
            (data(spark, lo, lo + 10).write.format(fmt).mode("append")
             .option("txnAppId", "app").option("txnVersion", ver).save(path))
    check_same(spark, dk, de, "txnAppId")
    assert spark.read.format("dk").load(dk).count() == 30
    with open(os.path.join(dk, "_delta_log", f"{2:020d}.json")) as f:
        txns = [json.loads(x)["txn"] for x in f if '"txn"' in x]
    assert txns and txns[0]["appId"] == "app" and txns[0]["version"] == 2


def test_write_errors(spark, tmp_path):
    dk = str(tmp_path / "err")
    data(spark, 0, 10).write.format("dk").mode("append").partitionBy("p").save(dk)
    # a time-travelled table is read-only (BATCH_READ only): Spark refuses the write
    with pytest.raises(Exception):
        data(spark, 0, 10).write.format("dk").mode("append").option("versionAsOf", 0).save(dk)
    dbg = spark._jvm.io.dk.spark.DkDebug
    before = dbg.nativeBytesOutstanding()
    with pytest.raises(Exception, match="DELTA_REPLACE_WHERE_MISMATCH"):
        (data(spark, 0, 10).write.format("dk").mode("overwrite")
         .option("replaceWhere", "p = 'a'").save(dk))
    with pytest.raises(Exception, match="data columns"):
        (data(spark, 0, 10).write.format("dk").mode("overwrite")
         .option("replaceWhere", "id > 3").save(dk))
    # the failed tasks' writer transactions freed everything (dk_jni.c's counting allocator)
    assert dbg.nativeBytesOutstanding() == before
    assert latest_version(spark, dk) == 0
    assert spark.read.format("delta").load(dk).count() == 10


def metadata(path, v):
    """The metaData action of version v (None when v has none)."""
    with open(os.path.join(path, "_delta_log", f"{v:020d}.json")) as f:
        for line in f:
            a = json.loads(line)
            if "metaData" in a:
                return a["metaData"]


def test_ddl_matches_delta(spark, tmp_path):
    dk, de = both(tmp_path, "ddl")
    dk2, de2 = both(tmp_path, "ctas")
    data(spark, 0, 60).createOrReplaceTempView("ddl_src")
    for cat, using, t, t2 in (("dk", "dk", dk, dk2), ("delta", "delta", de, de2)):
        spark.sql(f"CREATE TABLE {cat}.`{t}` (id bigint, p string, x double, st struct<a: int, s: string>) "
                  f"USING {using} PARTITIONED BY (p) COMMENT 'a comment' "
                  f"TBLPROPERTIES ('delta.checkpointInterval' = '5', 'owner.note' = 'x')")
        spark.sql(f"INSERT INTO {cat}.`{t}` SELECT id, p, x, st FROM ddl_src")
        spark.sql(f"CREATE TABLE {cat}.`{t2}` USING {using} PARTITIONED BY (p) "
                  f"TBLPROPERTIES ('delta.appendOnly' = 'false') AS SELECT id, p, d, arr FROM ddl_src")
        spark.sql(f"REPLACE TABLE {cat}.`{t2}` USING {using} AS SELECT id, m, b FROM ddl_src WHERE id < 30")
        spark.sql(f"CREATE OR REPLACE TABLE {cat}.`{t2}` USING {using} PARTITIONED BY (b) "
                  f"AS SELECT b, id FROM ddl_src WHERE id > 40")
    check_same(spark, dk, de, "create table")
    check_same(spark, dk2, de2, "ctas / replace")
    for a, b in ((dk, de), (dk2, de2)):
        for v in range(latest_version(spark, b) + 1):
            ma, mb = metadata(a, v), metadata(b, v)
            assert (ma is None) == (mb is None), f"{a} v{v}: metadata"
            if ma:
                for k in ("partitionColumns", "configuration", "description"):
                    assert ma.get(k) == mb.get(k), f"{a} v{v}: {k} {ma.get(k)} vs {mb.get(k)}"
                assert json.loads(ma["schemaString"]) == json.loads(mb["schemaString"])
            ca, cb = commit_info(a, v), commit_info(b, v)
            assert ca["operation"] == cb["operation"], f"{a} v{v}"
            if "TABLE" in ca["operation"]:
                assert ca["operationParameters"] == cb["operationParameters"], f"{a} v{v}"
    with pytest.raises(Exception, match="already exists|TABLE_OR_VIEW_ALREADY_EXISTS"):
        spark.sql(f"CREATE TABLE dk.`{dk}` (id bigint) USING dk")
    with pytest.raises(Exception, match="cannot be found|TABLE_OR_VIEW_NOT_FOUND|CANNOT_REPLACE_MISSING"):
        spark.sql(f"REPLACE TABLE dk.`{tmp_path}/missing` (id bigint) USING dk")


def test_streaming_append_exactly_once(spark, tmp_path):
    """A streaming query appending through dk (DkStreamingWrite: one dk commit per epoch with
    the app transaction appId = query id, version = epoch), run to the end of its source
    (Trigger.AvailableNow over a delta-spark table, one file per batch), then restarted from
    its checkpoint with its last batch replayed (the commit log's last entry removed, as after
    a crash between dk's commit and Spark's) and new source data: every value once, no gaps
    (delta-spark reads the table), one commit per epoch, the replayed epoch not committed twice."""
    src, path, cp = str(tmp_path / "src"), str(tmp_path / "stream"), str(tmp_path / "cp")

    def add(lo, hi):
        spark.range(lo, hi, 1, 2).selectExpr("id AS value", "cast(id % 3 AS int) AS p") \
            .write.format("delta").mode("append").save(src)

    def run():
        q = (spark.readStream.format("delta").option("maxFilesPerTrigger", 1).load(src)
             .writeStream.format("dk").outputMode("append").option("checkpointLocation", cp)
             .trigger(availableNow=True).start(path))
        q.awaitTermination(300)
        assert q.exception() is None, q.exception()
        return q.id

    spark.range(0).selectExpr("id AS value", "cast(id % 3 AS int) AS p").write.format("dk") \
        .mode("append").partitionBy("p").save(path)
    add(0, 100)
    add(100, 200)
    qid = run()
    commits = sorted(int(f) for f in os.listdir(os.path.join(cp, "commits")) if f.isdigit())
    assert len(commits) == 4, commits  # 4 source files, one a batch
    last = commits[-1]
    os.remove(os.path.join(cp, "commits", str(last)))  # Spark forgets it committed the batch
    crc = os.path.join(cp, "commits", f".{last}.crc")
    if os.path.exists(crc):
        os.remove(crc)
    v_before = latest_version(spark, path)
    add(200, 300)
    assert run() == qid
    df = spark.read.format("delta").load(path)
    n, d, hi = df.selectExpr("count(*)", "count(distinct value)", "max(value)").first()
    assert n == d == hi + 1 == 300, (n, d, hi)
    # the replayed batch committed nothing new to dk: its epoch was already in the table
    epochs = []
    for v in range(1, latest_version(spark, path) + 1):
        ci = commit_info(path, v)
        assert ci["operation"] == "STREAMING UPDATE"
        assert ci["operationParameters"]["queryId"] == qid
        epochs.append(int(ci["operationParameters"]["epochId"]))
    assert sorted(epochs) == list(range(len(epochs))) and latest_version(spark, path) == v_before + 2
    assert sorted(r[0] for r in spark.read.format("dk").load(path).select("value").collect()) == list(range(n))
