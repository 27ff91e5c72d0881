#!/usr/bin/env python3
"""Change-data-feed and streaming-source oracle: tables with delta.enableChangeDataFeed=true
written by Delta-Spark (one by delta-rs, one copied from the corpus), and what Spark answers.

Usage: cdf_oracle.py OUTDIR [NAME ...]      (idempotent: finished tables are skipped)

For each table in TABLES, OUTDIR/<name>/ holds
  delta/            the table root (a corpus table is copied with its mtimes)
  gen.json          the generator's steps, per step the version it produced
  DONE              generation finished
  cdf_oracle.json   Spark's answers (format below), written last
  changes/*.jsonl   rows of each table_changes range (multiset; dump_oracle's value encoding)

cdf_oracle.json (format "dk-cdf-oracle/1"):
  {table, table_root, writer, tools, latest_version, ranges_mode ("sampled" | "all"),
   history: [{version, timestamp_ms, operation}],      # DESCRIBE HISTORY (ICT where enabled)
   columns: [[name, Spark type JSON]],                 # the CDF read schema (latest schema +
                                                       # _change_type, _commit_version,
                                                       # _commit_timestamp)
   ranges: [{start, end, by: "version"} | {start_ts, end_ts, by: "timestamp"}
             + {rows_file, row_count} or {error_class, error}],
   streams: [STREAM]}
STREAM = {name, options (as passed to readStream), cdf (readChangeFeed), live (bool),
          batches: [{batch_id, start_offset, end_offset (Spark's DeltaSourceOffset JSON),
                     num_input_rows, rows (encoded, sorted)}],
          error_class, error (null when the query finished)}
A live stream (`live`: true) runs with a processing-time trigger while the generator commits
more versions (`phases`: the versions committed before and during the run).

Ranges (DK_CDF_ALL_RANGES=1: every [a, b] with 0 <= a <= b <= latest): by default a sample —
every [v, v], every [0, b], every [a, latest], the whole range, three seeded random ranges —
plus the error cases (start > end, start > latest, end > latest, CDF off) and timestamp
bounds (before the first commit, each commit's exact time, between commits, after the last).
Streams: Trigger.AvailableNow into foreachBatch (the batch boundaries and Spark's offsets are
kept), from the initial snapshot, startingVersion 0 / mid / latest, startingTimestamp, under
maxFilesPerTrigger / maxBytesPerTrigger, with ignoreDeletes / ignoreChanges / skipChangeCommits
/ excludeRegex / failOnDataLoss, CDF streams (readChangeFeed), and errors as Spark raises them.
"""
import calendar
import datetime as dt
import json
import os
import random
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

from dump_oracle import _err_class, canon, encode_value, write_rows  # noqa: E402

FORMAT = "dk-cdf-oracle/1"
CDF = "'delta.enableChangeDataFeed'='true'"
CORPUS = os.path.join(REPO, "..", "shared", "testdata")


def q(path):
    return "delta.`%s`" % path


def all_ranges():
    return os.environ.get("DK_CDF_ALL_RANGES", "") not in ("", "0")


# ---------------------------------------------------------------------------------------------
# generators: fn(spark, path) -> list of step names, one per commit after the first (each step
# is run by `step`, which records the version it produced)

class Steps:
    def __init__(self, spark, path):
        self.spark, self.path, self.steps = spark, path, []

    def sql(self, what, text):
        self.spark.sql(text.replace("{t}", q(self.path)))
        self.done(what)

    def done(self, what):
        v = self.spark.sql("DESCRIBE HISTORY %s LIMIT 1" % q(self.path)).collect()[0]["version"]
        self.steps.append({"step": what, "version": int(v)})

    def append(self, what, df, mode="append", **opts):
        w = df.write.format("delta").mode(mode)
        for k, val in opts.items():
            w = w.option(k, val)
        w.save(self.path)
        self.done(what)


def rows_df(spark, lo, hi, files, expr=("id", "concat('v', cast(id as string)) as v",
                                        "cast(id % 4 as int) as n")):
    return spark.range(lo, hi, 1, files).selectExpr(*expr)


def gen_cdf_basic(spark, path):
    """unpartitioned, copy-on-write DML (cdc files), OPTIMIZE, overwrite, whole-table delete."""
    s = Steps(spark, path)
    s.sql("create", "CREATE TABLE {t} (id BIGINT, v STRING, n INT) USING delta "
                    f"TBLPROPERTIES ({CDF}, 'delta.enableDeletionVectors'='false')")
    s.append("insert 20 rows, 2 files", rows_df(spark, 0, 20, 2))
    s.append("insert 10 rows, 1 file", rows_df(spark, 20, 30, 1))
    s.sql("update id%5=0 (cdc files)", "UPDATE {t} SET n = n + 100 WHERE id % 5 = 0")
    s.sql("delete id%7=3 (cdc files)", "DELETE FROM {t} WHERE id % 7 = 3")
    rows_df(spark, 25, 40, 1).createOrReplaceTempView("cdf_basic_src")
    s.sql("merge: update matched, insert not matched, delete id<3 not matched by source",
          "MERGE INTO {t} t USING cdf_basic_src s ON t.id = s.id "
          "WHEN MATCHED THEN UPDATE SET v = concat(s.v, '-m') "
          "WHEN NOT MATCHED THEN INSERT * "
          "WHEN NOT MATCHED BY SOURCE AND t.id < 3 THEN DELETE")
    s.sql("optimize (dataChange=false)", "OPTIMIZE {t}")
    rows_df(spark, 1000, 1001, 1).createOrReplaceTempView("cdf_basic_nomatch")
    s.sql("merge matching nothing (no-op merge)",
          "MERGE INTO {t} t USING cdf_basic_nomatch s ON t.id = s.id AND s.id < 0 "
          "WHEN MATCHED THEN UPDATE SET v = s.v")
    s.append("overwrite 8 rows (inferred)", rows_df(spark, 100, 108, 2), mode="overwrite")
    s.sql("delete everything (metadata-only, inferred)", "DELETE FROM {t}")
    s.append("insert 5 rows", rows_df(spark, 200, 205, 1))
    return s.steps


def gen_cdf_partitioned(spark, path):
    """partitioned by a string with special characters: cdc files under _change_data/p=..."""
    s = Steps(spark, path)
    s.sql("create", "CREATE TABLE {t} (id BIGINT, v STRING, p STRING) USING delta "
                    f"PARTITIONED BY (p) TBLPROPERTIES ({CDF})")
    parts = "element_at(array('a b', 'x=y', 'c', 'ü%'), cast(id % 4 as int) + 1) as p"
    s.append("insert 24 rows over 4 partitions",
             rows_df(spark, 0, 24, 2, ("id", "concat('v', cast(id as string)) as v", parts)))
    s.sql("update p='a b' (cdc files)", "UPDATE {t} SET v = upper(v) WHERE p = 'a b'")
    s.sql("delete p='x=y' (metadata-only)", "DELETE FROM {t} WHERE p = 'x=y'")
    s.append("replaceWhere p='c'",
             rows_df(spark, 50, 53, 1, ("id", "'rw' as v", "'c' as p")), mode="overwrite",
             replaceWhere="p = 'c'")
    s.sql("delete id<3 (partial, cdc)", "DELETE FROM {t} WHERE id < 3")
    s.sql("insert a null partition", "INSERT INTO {t} VALUES (90, 'nullp', NULL)")
    rows_df(spark, 0, 12, 1, ("id", "'mrg' as v", parts)).createOrReplaceTempView("cdf_part_src")
    s.sql("merge update/insert", "MERGE INTO {t} t USING cdf_part_src s ON t.id = s.id "
                                 "WHEN MATCHED THEN UPDATE SET v = s.v "
                                 "WHEN NOT MATCHED THEN INSERT *")
    return s.steps


def gen_cdf_dv(spark, path):
    """deletion vectors: DELETE writes no cdc (DV differences), UPDATE/MERGE do, RESTORE."""
    s = Steps(spark, path)
    s.sql("create", "CREATE TABLE {t} (id BIGINT, v STRING, n INT) USING delta "
                    f"TBLPROPERTIES ({CDF}, 'delta.enableDeletionVectors'='true')")
    s.append("insert 100 rows, 2 files", rows_df(spark, 0, 100, 2))
    s.sql("delete id%10=1 (DV, no cdc)", "DELETE FROM {t} WHERE id % 10 = 1")
    s.sql("delete id%10=2 (DV over DV)", "DELETE FROM {t} WHERE id % 10 = 2")
    s.sql("update id%10=3 (DV + cdc)", "UPDATE {t} SET n = -1 WHERE id % 10 = 3")
    rows_df(spark, 95, 110, 1).createOrReplaceTempView("cdf_dv_src")
    s.sql("merge with DVs", "MERGE INTO {t} t USING cdf_dv_src s ON t.id = s.id "
                            "WHEN MATCHED AND s.id % 2 = 0 THEN DELETE "
                            "WHEN MATCHED THEN UPDATE SET v = 'merged' "
                            "WHEN NOT MATCHED THEN INSERT *")
    s.sql("restore to the first delete", "RESTORE TABLE {t} TO VERSION AS OF 2")
    s.sql("delete id<5 (DV)", "DELETE FROM {t} WHERE id < 5")
    s.sql("purge DVs (dataChange=false)", "REORG TABLE {t} APPLY (PURGE)")
    s.sql("delete id%10=9 after purge (DV)", "DELETE FROM {t} WHERE id % 10 = 9")
    return s.steps


def gen_cdf_colmap(spark, path):
    """column mapping (name): add, rename, drop columns between data changes."""
    s = Steps(spark, path)
    s.sql("create", "CREATE TABLE {t} (id BIGINT, a STRING, b INT) USING delta "
                    f"TBLPROPERTIES ({CDF}, 'delta.columnMapping.mode'='name', "
                    "'delta.enableDeletionVectors'='false')")
    s.append("insert 10", rows_df(spark, 0, 10, 1, ("id", "concat('a', id) as a",
                                                   "cast(id as int) as b")))
    s.sql("update (cdc)", "UPDATE {t} SET b = b * 10 WHERE id < 3")
    s.sql("add column c", "ALTER TABLE {t} ADD COLUMNS (c STRING)")
    s.sql("insert with c", "INSERT INTO {t} VALUES (10, 'a10', 10, 'c10')")
    s.sql("rename a to a2", "ALTER TABLE {t} RENAME COLUMN a TO a2")
    s.sql("insert after rename", "INSERT INTO {t} VALUES (11, 'a11', 11, 'c11')")
    s.sql("drop column b", "ALTER TABLE {t} DROP COLUMN b")
    s.sql("delete id=5 (cdc)", "DELETE FROM {t} WHERE id = 5")
    return s.steps


def gen_cdf_row_tracking(spark, path):
    s = Steps(spark, path)
    s.sql("create", "CREATE TABLE {t} (id BIGINT, v STRING, n INT) USING delta "
                    f"TBLPROPERTIES ({CDF}, 'delta.enableRowTracking'='true', "
                    "'delta.enableDeletionVectors'='true')")
    s.append("insert 30, 2 files", rows_df(spark, 0, 30, 2))
    s.sql("update (DV + cdc)", "UPDATE {t} SET n = 99 WHERE id % 6 = 0")
    s.sql("delete (DV)", "DELETE FROM {t} WHERE id % 6 = 1")
    rows_df(spark, 25, 35, 1).createOrReplaceTempView("cdf_rt_src")
    s.sql("merge", "MERGE INTO {t} t USING cdf_rt_src s ON t.id = s.id "
                   "WHEN MATCHED THEN UPDATE SET v = 'm' WHEN NOT MATCHED THEN INSERT *")
    return s.steps


def gen_cdf_ict(spark, path):
    """in-commit timestamps; commit-file mtimes all equal, so they must not be used."""
    s = Steps(spark, path)
    s.sql("create", "CREATE TABLE {t} (id BIGINT, v STRING, n INT) USING delta "
                    f"TBLPROPERTIES ({CDF}, 'delta.enableInCommitTimestamps'='true')")
    for i in range(3):
        time.sleep(0.05)
        s.append("insert 5", rows_df(spark, i * 5, i * 5 + 5, 1))
    s.sql("update (cdc)", "UPDATE {t} SET n = 7 WHERE id % 3 = 0")
    log = os.path.join(path, "_delta_log")
    for name in os.listdir(log):
        if name.endswith(".json") and name[:20].isdigit():
            os.utime(os.path.join(log, name), ns=(1704067200000 * 1000000,) * 2)
    s.steps.append({"step": "commit mtimes all set to 2024-01-01", "version": None})
    return s.steps


def gen_cdf_later(spark, path):
    """CDF off at v0-v1, enabled at v2, disabled at v5: ranges over v0-v1 or v5.. fail."""
    s = Steps(spark, path)
    s.sql("create without CDF", "CREATE TABLE {t} (id BIGINT, v STRING, n INT) USING delta")
    s.append("insert 5", rows_df(spark, 0, 5, 1))
    s.sql("enable CDF", "ALTER TABLE {t} SET TBLPROPERTIES (" + CDF + ")")
    s.append("insert 5", rows_df(spark, 5, 10, 1))
    s.sql("update (cdc)", "UPDATE {t} SET n = 0 WHERE id < 7")
    s.sql("disable CDF", "ALTER TABLE {t} SET TBLPROPERTIES ('delta.enableChangeDataFeed'='false')")
    s.append("insert 5", rows_df(spark, 10, 15, 1))
    return s.steps


def gen_cdf_schema_add(spark, path):
    """no column mapping; an additive column change inside the range."""
    s = Steps(spark, path)
    s.sql("create", "CREATE TABLE {t} (id BIGINT, v STRING) USING delta "
                    f"TBLPROPERTIES ({CDF})")
    s.append("insert 6", rows_df(spark, 0, 6, 1, ("id", "concat('v', id) as v")))
    s.sql("add column w", "ALTER TABLE {t} ADD COLUMNS (w INT)")
    s.sql("insert with w", "INSERT INTO {t} VALUES (6, 'v6', 6), (7, 'v7', 7)")
    s.sql("update w (cdc)", "UPDATE {t} SET w = 0 WHERE id < 2")
    return s.steps


def gen_cdf_vacuumed(spark, path):
    """VACUUM RETAIN 0 HOURS after DML: ranges over the vacuumed versions fail."""
    s = Steps(spark, path)
    s.sql("create", "CREATE TABLE {t} (id BIGINT, v STRING, n INT) USING delta "
                    f"TBLPROPERTIES ({CDF}, 'delta.enableDeletionVectors'='false')")
    s.append("insert 10", rows_df(spark, 0, 10, 1))
    s.sql("update (cdc)", "UPDATE {t} SET n = 5 WHERE id < 3")
    s.append("overwrite", rows_df(spark, 20, 25, 1), mode="overwrite")
    s.sql("vacuum retain 0 hours", "VACUUM {t} RETAIN 0 HOURS")
    return s.steps


def gen_cdf_stream(spark, path):
    """partitioned appends of several files, a delete-only commit, an update, OPTIMIZE: for the
    streaming source (start positions, admission limits, ignoreDeletes/ignoreChanges/...)."""
    s = Steps(spark, path)
    s.sql("create", "CREATE TABLE {t} (id BIGINT, v STRING, p STRING) USING delta "
                    f"PARTITIONED BY (p) TBLPROPERTIES ({CDF}, "
                    "'delta.enableDeletionVectors'='false')")
    expr = ("id", "concat('v', cast(id as string)) as v",
            "element_at(array('a', 'b', 'c'), cast(id % 3 as int) + 1) as p")
    s.append("append 3 files (p=a,b,c)", rows_df(spark, 0, 9, 1, expr).repartition(3, "p"))
    s.append("append 2 files", rows_df(spark, 9, 13, 1, expr[:2] + ("'a' as p",)).repartition(2))
    s.append("append 1 file", rows_df(spark, 13, 16, 1, expr))
    s.sql("delete p='b' (remove-only)", "DELETE FROM {t} WHERE p = 'b'")
    s.append("append 2 files", rows_df(spark, 16, 22, 2, expr[:2] + ("'c' as p",)))
    s.sql("update id<3 (remove+add, cdc)", "UPDATE {t} SET v = 'upd' WHERE id < 3")
    s.append("append 1 file", rows_df(spark, 22, 25, 1, expr[:2] + ("'b' as p",)))
    s.sql("optimize (dataChange=false)", "OPTIMIZE {t}")
    s.append("append 1 file", rows_df(spark, 25, 28, 1, expr[:2] + ("'a' as p",)))
    return s.steps


def gen_cdf_stream_truncated(spark, path):
    """commits 0..4 deleted after a checkpoint at v5 (as log cleanup leaves it):
    failOnDataLoss decides whether a stream from v1 fails or starts at the earliest commit."""
    s = Steps(spark, path)
    s.sql("create", "CREATE TABLE {t} (id BIGINT, v STRING, n INT) USING delta "
                    f"TBLPROPERTIES ({CDF}, 'delta.checkpointInterval'='5')")
    for i in range(7):
        s.append("append", rows_df(spark, i * 3, i * 3 + 3, 1))
    log = os.path.join(path, "_delta_log")
    for v in range(5):
        for ext in (".json", ".crc"):
            p = os.path.join(log, "%020d%s" % (v, ext))
            if os.path.exists(p):
                os.unlink(p)
    s.steps.append({"step": "deleted commits 0-4 (checkpoint at 5 kept)", "version": None})
    return s.steps


def gen_cdf_deltars(spark, path):
    """written by delta-rs with CDF: its cdc files for delete/update/merge."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake
    steps = []

    def tbl(lo, hi):
        ids = list(range(lo, hi))
        return pa.table({"id": pa.array(ids, pa.int64()),
                         "v": pa.array(["v%d" % i for i in ids], pa.string()),
                         "p": pa.array(["x" if i % 2 else "y" for i in ids], pa.string())})
    write_deltalake(path, tbl(0, 20), partition_by=["p"], mode="append",
                    configuration={"delta.enableChangeDataFeed": "true"})
    steps.append({"step": "delta-rs create + append 20", "version": 0})
    write_deltalake(path, tbl(20, 30), partition_by=["p"], mode="append")
    steps.append({"step": "append 10", "version": 1})
    DeltaTable(path).delete("id % 5 = 0")
    steps.append({"step": "delete id%5=0", "version": 2})
    DeltaTable(path).update(predicate="p = 'x'", updates={"v": "'upd'"})
    steps.append({"step": "update p=x", "version": 3})
    (DeltaTable(path).merge(tbl(25, 35), predicate="t.id = s.id", source_alias="s",
                            target_alias="t")
     .when_matched_update_all().when_not_matched_insert_all().execute())
    steps.append({"step": "merge 25..34", "version": 4})
    return steps


def gen_corpus_copy(rel):
    def gen(spark, path):
        shutil.copytree(os.path.join(CORPUS, rel), path, copy_function=shutil.copy2)
        return [{"step": "copy of ../shared/testdata/%s (mtimes kept)" % rel, "version": None}]
    return gen


# ---------------------------------------------------------------------------------------------
# streams: name -> (options, cdf). `mid` and `ts:V` are resolved against the table's history.

def _streams_basic():
    return [
        ("snapshot", {}), ("v0", {"startingVersion": "0"}),
        ("v0_ignore_deletes", {"startingVersion": "0", "ignoreDeletes": "true"}),
        ("v0_ignore_changes", {"startingVersion": "0", "ignoreChanges": "true"}),
        ("v0_skip_change_commits", {"startingVersion": "0", "skipChangeCommits": "true"}),
        ("v0_skip_files1", {"startingVersion": "0", "skipChangeCommits": "true",
                            "maxFilesPerTrigger": "1"}),
        ("cdf_v0", {"startingVersion": "0"}, True),
        ("cdf_v0_files1", {"startingVersion": "0", "maxFilesPerTrigger": "1"}, True),
        ("cdf_snapshot", {}, True),
    ]


STREAMS = {
    "cdf_basic": _streams_basic,
    "cdf_dv": lambda: [
        ("snapshot", {}), ("v0", {"startingVersion": "0"}),
        ("v0_ignore_changes", {"startingVersion": "0", "ignoreChanges": "true"}),
        ("v0_skip_change_commits", {"startingVersion": "0", "skipChangeCommits": "true"}),
        ("cdf_v0", {"startingVersion": "0"}, True),
        ("cdf_v0_files1", {"startingVersion": "0", "maxFilesPerTrigger": "1"}, True),
    ],
    "cdf_colmap": lambda: [
        ("v0", {"startingVersion": "0"}),
        ("v0_ignore_changes", {"startingVersion": "0", "ignoreChanges": "true"}),
        ("v5", {"startingVersion": "5"}),
        ("cdf_v0", {"startingVersion": "0"}, True),
        ("snapshot", {}),
    ],
    "cdf_schema_add": lambda: [
        ("v0_ignore_changes", {"startingVersion": "0", "ignoreChanges": "true"}),
        ("cdf_v0", {"startingVersion": "0"}, True),
    ],
    "cdf_later": lambda: [
        ("cdf_v0", {"startingVersion": "0"}, True),
        ("cdf_v2", {"startingVersion": "2"}, True),
        ("v0_ignore_changes", {"startingVersion": "0", "ignoreChanges": "true"}),
    ],
    "cdf_stream": lambda: [
        ("snapshot", {}), ("snapshot_files2", {"maxFilesPerTrigger": "2"}),
        ("snapshot_bytes1", {"maxBytesPerTrigger": "1"}),
        ("v0", {"startingVersion": "0"}),
        ("v0_ignore_deletes", {"startingVersion": "0", "ignoreDeletes": "true"}),
        ("v0_ignore_changes", {"startingVersion": "0", "ignoreChanges": "true"}),
        ("v0_ignore_changes_files1", {"startingVersion": "0", "ignoreChanges": "true",
                                      "maxFilesPerTrigger": "1"}),
        ("v0_skip_change_commits", {"startingVersion": "0", "skipChangeCommits": "true"}),
        ("v0_skip_files2", {"startingVersion": "0", "skipChangeCommits": "true",
                            "maxFilesPerTrigger": "2"}),
        ("v0_skip_bytes", {"startingVersion": "0", "skipChangeCommits": "true",
                           "maxBytesPerTrigger": "BYTES2"}),
        ("v0_skip_files3_bytes", {"startingVersion": "0", "skipChangeCommits": "true",
                                  "maxFilesPerTrigger": "3", "maxBytesPerTrigger": "BYTES2"}),
        ("v0_skip_exclude_b", {"startingVersion": "0", "skipChangeCommits": "true",
                               "excludeRegex": "p=b"}),
        # Java regex syntax POSIX ERE does not have: (?i), \\d{n}, a lookahead
        ("v0_skip_exclude_java", {"startingVersion": "0", "skipChangeCommits": "true",
                                  "excludeRegex": "(?i)P=B/part-\\d{5}-"}),
        ("cdf_v0_exclude_lookahead", {"startingVersion": "0", "excludeRegex": "p=(?!a)"}, True),
        ("bad_exclude_regex", {"startingVersion": "0", "excludeRegex": "p=(b"}),
        ("v5", {"startingVersion": "5"}),
        ("v5_files1", {"startingVersion": "5", "maxFilesPerTrigger": "1"}),
        ("latest", {"startingVersion": "latest"}),
        ("ts_v5", {"startingTimestamp": "ts:5"}),
        ("ts_between_4_5", {"startingTimestamp": "ts:4.5"}),
        ("ts_after_last", {"startingTimestamp": "ts:after"}),
        ("bad_both", {"startingVersion": "1", "startingTimestamp": "ts:5"}),
        ("bad_version", {"startingVersion": "-1"}),
        ("bad_max_files", {"maxFilesPerTrigger": "0"}),
        ("version_after_latest", {"startingVersion": "LATEST+5"}),
        ("cdf_v0", {"startingVersion": "0"}, True),
        ("cdf_v0_files2", {"startingVersion": "0", "maxFilesPerTrigger": "2"}, True),
        ("cdf_snapshot_files2", {"maxFilesPerTrigger": "2"}, True),
    ],
    "cdf_stream_truncated": lambda: [
        ("v1_fail_on_data_loss", {"startingVersion": "1"}),
        ("v1_no_fail_on_data_loss", {"startingVersion": "1", "failOnDataLoss": "false"}),
        ("v5", {"startingVersion": "5"}),
        ("snapshot", {}),
        ("cdf_v1_no_fail", {"startingVersion": "1", "failOnDataLoss": "false"}, True),
    ],
    "cdf_deltars": lambda: [
        ("v0_ignore_changes", {"startingVersion": "0", "ignoreChanges": "true"}),
        ("cdf_v0", {"startingVersion": "0"}, True),
    ],
}

TABLES = [
    {"name": "cdf_basic", "gen": gen_cdf_basic},
    {"name": "cdf_partitioned", "gen": gen_cdf_partitioned},
    {"name": "cdf_dv", "gen": gen_cdf_dv},
    {"name": "cdf_colmap", "gen": gen_cdf_colmap},
    {"name": "cdf_row_tracking", "gen": gen_cdf_row_tracking},
    {"name": "cdf_ict", "gen": gen_cdf_ict},
    {"name": "cdf_later", "gen": gen_cdf_later},
    {"name": "cdf_schema_add", "gen": gen_cdf_schema_add},
    {"name": "cdf_vacuumed", "gen": gen_cdf_vacuumed},
    {"name": "cdf_stream", "gen": gen_cdf_stream},
    {"name": "cdf_stream_truncated", "gen": gen_cdf_stream_truncated, "first_version": 5},
    {"name": "cdf_deltars", "gen": gen_cdf_deltars, "writer": "delta-rs"},
    {"name": "corpus_cdf_operation_params", "writer": "corpus",
     "gen": gen_corpus_copy("delta-golden/commit-info-containing-arbitrary-operationParams-types")},
]


# ---------------------------------------------------------------------------------------------
# dumping

def _ms(ts):
    return calendar.timegm(ts.timetuple()) * 1000 + ts.microsecond // 1000


def _fmt_ts(ms):
    d = dt.datetime.fromtimestamp(ms / 1000.0, tz=dt.timezone.utc)
    return d.strftime("%Y-%m-%d %H:%M:%S.") + "%03d" % (ms % 1000)


def history(spark, root):
    h = [{"version": int(r["version"]), "timestamp_ms": _ms(r["timestamp"]),
          "operation": r["operation"]}
         for r in spark.sql("DESCRIBE HISTORY %s" % q(root))
         .select("version", "timestamp", "operation").collect()]
    h.sort(key=lambda e: e["version"])
    return h


def encode(df):
    fields = df.schema.fields
    rows = [canon({f.name: encode_value(r[i], f.dataType) for i, f in enumerate(fields)})
            for r in df.collect()]
    rows.sort()
    return rows


def _error(ex):
    """Spark's error class and first message line; a failed stream's StreamingQueryException
    ([STREAM_FAILED]) is unwrapped to the Delta error class inside it."""
    msg = str(ex)
    cls = _err_class(ex)
    if cls == "STREAM_FAILED":
        inner = msg.split("[STREAM_FAILED]", 1)[1]
        ic = _err_class(type("E", (Exception,), {})(inner))
        cls = ic if ic and not ic.startswith(" ") and ic.isupper() else cls
        lines = [ln for ln in msg.splitlines() if "[" in ln and "STREAM_FAILED" not in ln]
        msg = lines[0] if lines else inner
    return {"error_class": cls, "error": msg.splitlines()[0][:600] if msg else ""}


def read_changes(spark, root, opts):
    r = spark.read.format("delta").option("readChangeFeed", "true")
    for k, v in opts.items():
        r = r.option(k, str(v))
    return r.load(root)


def range_specs(first, latest, hist):
    out, seen = [], set()

    def add(a, b):
        if (a, b) not in seen:
            seen.add((a, b))
            out.append({"by": "version", "start": a, "end": b})
    if all_ranges():
        for a in range(first, latest + 1):
            for b in range(a, latest + 1):
                add(a, b)
    else:
        for v in range(first, latest + 1):
            add(v, v)
            add(first, v)
            add(v, latest)
        rnd = random.Random(19)
        for _ in range(3):
            a = rnd.randint(first, latest)
            add(a, rnd.randint(a, latest))
    # errors and edges
    for a, b in ((latest, max(first, latest - 1)), (latest + 1, latest + 2), (first, latest + 3),
                 (latest + 1, None), (first, None)):
        if (a, b) not in seen and not (b is not None and a == b):
            seen.add((a, b))
            out.append({"by": "version", "start": a, "end": b})
    ts = [h["timestamp_ms"] for h in hist if h["version"] >= first]
    cand = [ts[0] - 1000, ts[0], ts[-1], ts[-1] + 86400000]
    if len(ts) > 2:
        cand += [ts[1], (ts[1] + ts[2]) // 2, ts[2] - 1]
    cand = sorted(set(cand))
    for i, s in enumerate(cand):
        for e in cand[i:i + 3] + [None]:
            out.append({"by": "timestamp", "start_ts": s, "end_ts": e})
    out.append({"by": "timestamp", "start_ts": ts[-1], "end_ts": ts[0]})  # end before start
    return out


def dump_ranges(spark, tdir, root, first, latest, hist, log):
    ranges = []
    for r in range_specs(first, latest, hist):
        if r["by"] == "version":
            opts = {"startingVersion": r["start"]}
            if r["end"] is not None:
                opts["endingVersion"] = r["end"]
            tag = "v%d_%s" % (r["start"], "open" if r["end"] is None else r["end"])
        else:
            opts = {"startingTimestamp": _fmt_ts(r["start_ts"])}
            r["start"] = opts["startingTimestamp"]
            if r["end_ts"] is not None:
                opts["endingTimestamp"] = _fmt_ts(r["end_ts"])
                r["end"] = opts["endingTimestamp"]
            tag = "t%d_%s" % (r["start_ts"], "open" if r["end_ts"] is None else r["end_ts"])
        try:
            rows = encode(read_changes(spark, root, opts))
        except Exception as ex:  # noqa: BLE001 - Spark's error is the answer
            r.update(_error(ex))
        else:
            rel = "changes/%s.jsonl" % tag
            write_rows(tdir, rel, rows)
            r.update({"rows_file": rel, "row_count": len(rows)})
        ranges.append(r)
    log("  %d ranges" % len(ranges))
    return ranges


def _progress(p):
    if isinstance(p, dict):
        return p
    return json.loads(p.json) if hasattr(p, "json") else json.loads(str(p))


def _resolve(opts, hist, latest, files_bytes):
    out = {}
    ts = {h["version"]: h["timestamp_ms"] for h in hist}
    for k, v in opts.items():
        if v.startswith("ts:"):
            x = v[3:]
            if x == "after":
                ms = ts[latest] + 86400000
            elif "." in x:
                a = int(x.split(".")[0])
                ms = (ts[a] + ts[a + 1]) // 2
            else:
                ms = ts[int(x)]
            v = _fmt_ts(ms)
        elif v == "BYTES2":
            v = str(files_bytes)
        elif v.startswith("LATEST+"):
            v = str(latest + int(v[7:]))
        out[k] = v
    return out


def run_stream(spark, root, name, opts, cdf, chk):
    batches = []

    def each(df, bid):
        batches.append({"batch_id": int(bid), "rows": encode(df)})
    try:
        r = spark.readStream.format("delta")
        if cdf:
            r = r.option("readChangeFeed", "true")
        for k, v in opts.items():
            r = r.option(k, v)
        sq = (r.load(root).writeStream.foreachBatch(each)
              .option("checkpointLocation", chk).trigger(availableNow=True).start())
    except Exception as ex:  # noqa: BLE001 - refused at start
        return {"batches": [], **_error(ex)}
    err = None
    try:
        sq.awaitTermination(300)
    except Exception as ex:  # noqa: BLE001
        err = _error(ex)
    if err is None and sq.isActive:
        sq.stop()
        err = {"error_class": "TIMEOUT", "error": "stream did not finish in 300 s"}
    return {"batches": _merge_progress(batches, sq.recentProgress),
            **(err or {"error_class": None, "error": None})}


def _merge_progress(batches, progress):
    prog = {}
    for p in progress:
        p = _progress(p)
        src = (p.get("sources") or [{}])[0]
        prog[int(p["batchId"])] = {
            "start_offset": _offset(src.get("startOffset")),
            "end_offset": _offset(src.get("endOffset")),
            "num_input_rows": src.get("numInputRows", p.get("numInputRows"))}
    out = []
    for b in batches:
        b.update(prog.get(b["batch_id"], {}))
        out.append(b)
    return out


def _offset(o):
    if o is None or isinstance(o, dict):
        return o
    try:
        return json.loads(o)
    except (TypeError, ValueError):
        return o


def dump_streams(spark, name, root, latest, hist, log):
    mk = STREAMS.get(name)
    if not mk:
        return []
    sizes = _file_sizes(root)
    two = sum(sizes[:2]) if len(sizes) >= 2 else (sizes[0] if sizes else 1)
    out = []
    for spec in mk():
        sname, opts = spec[0], spec[1]
        cdf = len(spec) > 2 and spec[2]
        ropts = _resolve(opts, hist, latest, two)
        chk = tempfile.mkdtemp(prefix="dk-cdf-stream-")
        try:
            res = run_stream(spark, root, sname, ropts, cdf, chk)
        finally:
            shutil.rmtree(chk, ignore_errors=True)
        res.update({"name": sname, "options": ropts, "cdf": bool(cdf), "live": False})
        out.append(res)
        log("  stream %s: %d batches%s" % (sname, len(res["batches"]),
                                           ", " + res["error_class"] if res.get("error_class")
                                           else ""))
    return out


def _file_sizes(root):
    """Sizes of the latest snapshot's data files (for maxBytesPerTrigger = two files' bytes)."""
    from deltalake import DeltaTable
    try:
        acts = DeltaTable(root).get_add_actions(flatten=True).to_pydict()
        return sorted(int(s) for s in acts["size_bytes"])
    except Exception:  # noqa: BLE001 - delta-rs may not read every table
        return [1]


def live_stream(spark, tdir, log):
    """A stream running (processing-time trigger) while columns are added: Spark fails it with
    DELTA_SCHEMA_CHANGED. `phases`: versions 0..before existed at start; the rest were
    committed while it ran."""
    root = os.path.join(tdir, "delta")
    s = Steps(spark, root)
    s.sql("create", "CREATE TABLE {t} (id BIGINT, v STRING) USING delta "
                    f"TBLPROPERTIES ({CDF})")
    s.append("insert 3", rows_df(spark, 0, 3, 1, ("id", "concat('v', id) as v")))
    s.append("insert 3", rows_df(spark, 3, 6, 1, ("id", "concat('v', id) as v")))
    batches = []

    def each(df, bid):
        batches.append({"batch_id": int(bid), "rows": encode(df)})
    chk = tempfile.mkdtemp(prefix="dk-cdf-live-")
    sq = (spark.readStream.format("delta").option("startingVersion", "0").load(root)
          .writeStream.foreachBatch(each).option("checkpointLocation", chk)
          .trigger(processingTime="200 milliseconds").start())
    deadline = time.time() + 120
    while time.time() < deadline:
        p = sq.lastProgress
        if p is not None:
            end = _offset(((_progress(p).get("sources") or [{}])[0]).get("endOffset"))
            if isinstance(end, dict) and end.get("reservoirVersion", 0) >= 3:
                break
        time.sleep(0.2)
    before = 2
    s.sql("add column w", "ALTER TABLE {t} ADD COLUMNS (w INT)")
    s.sql("insert with w", "INSERT INTO {t} VALUES (6, 'v6', 6)")
    err = {"error_class": "TIMEOUT", "error": "stream did not fail in 120 s"}
    try:
        sq.awaitTermination(120)
    except Exception as ex:  # noqa: BLE001
        err = _error(ex)
    if sq.isActive:
        sq.stop()
    shutil.rmtree(chk, ignore_errors=True)
    res = {"name": "live_add_column", "options": {"startingVersion": "0"}, "cdf": False,
           "live": True, "phases": {"before": before, "after": s.steps[-1]["version"]},
           "batches": _merge_progress(batches, sq.recentProgress), **err}
    log("  live stream: %d batches, %s" % (len(res["batches"]), res["error_class"]))
    return s.steps, res


def dump_table(spark, outdir, spec, log):
    from sparkenv import versions
    name = spec["name"]
    tdir = os.path.join(outdir, name)
    root = os.path.join(tdir, "delta")
    if not os.path.exists(os.path.join(tdir, "DONE")):
        if os.path.exists(tdir):
            shutil.rmtree(tdir)
        os.makedirs(tdir)
        steps = spec["gen"](spark, root)
        with open(os.path.join(tdir, "gen.json"), "w") as f:
            json.dump({"name": name, "steps": steps}, f, indent=1)
        with open(os.path.join(tdir, "DONE"), "w") as f:
            f.write("ok\n")
    if os.path.exists(os.path.join(tdir, "cdf_oracle.json")):
        return False
    t0 = time.time()
    spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()
    hist = history(spark, root)
    latest = hist[-1]["version"]
    first = spec.get("first_version", hist[0]["version"])
    cols = [[f.name, json.loads(f.dataType.json())]
            for f in read_changes(spark, root, {"startingVersion": latest}).schema.fields]
    ranges = dump_ranges(spark, tdir, root, first, latest, hist, log)
    streams = dump_streams(spark, name, root, latest, hist, log)
    oracle = {"format": FORMAT, "table": name, "table_root": "delta",
              "writer": spec.get("writer", "delta-spark"), "tools": versions(),
              "latest_version": latest, "first_version": first,
              "ranges_mode": "all" if all_ranges() else "sampled",
              "history": hist, "columns": cols, "ranges": ranges, "streams": streams}
    _write_json(os.path.join(tdir, "cdf_oracle.json"), oracle)
    log("cdf %s: %.1fs" % (name, time.time() - t0))
    return True


def dump_live(spark, outdir, log):
    tdir = os.path.join(outdir, "cdf_live")
    if os.path.exists(os.path.join(tdir, "cdf_oracle.json")):
        return
    if os.path.exists(tdir):
        shutil.rmtree(tdir)
    os.makedirs(tdir)
    from sparkenv import versions
    steps, res = live_stream(spark, tdir, log)
    with open(os.path.join(tdir, "gen.json"), "w") as f:
        json.dump({"name": "cdf_live", "steps": steps}, f, indent=1)
    hist = history(spark, os.path.join(tdir, "delta"))
    _write_json(os.path.join(tdir, "cdf_oracle.json"), {
        "format": FORMAT, "table": "cdf_live", "table_root": "delta", "writer": "delta-spark",
        "tools": versions(), "latest_version": hist[-1]["version"], "first_version": 0,
        "ranges_mode": "none", "history": hist, "columns": None, "ranges": [],
        "streams": [res]})
    with open(os.path.join(tdir, "DONE"), "w") as f:
        f.write("ok\n")


def _write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1, ensure_ascii=False)
    os.replace(tmp, path)


def table_names():
    return [t["name"] for t in TABLES] + ["cdf_live"]


def build(outdir, names=None, log=print):
    todo = [n for n in table_names() if (not names or n in names)
            and not os.path.exists(os.path.join(outdir, n, "cdf_oracle.json"))]
    if not todo:
        log("cdf oracle: all tables present in %s" % outdir)
        return 0
    from sparkenv import get_spark
    t0 = time.time()
    spark = get_spark("dk-cdf-oracle")
    os.makedirs(outdir, exist_ok=True)
    for spec in TABLES:
        if spec["name"] in todo:
            dump_table(spark, outdir, spec, log)
    if "cdf_live" in todo:
        dump_live(spark, outdir, log)
    spark.stop()
    log("cdf oracle: %.1fs" % (time.time() - t0))
    return 0


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    return build(os.path.abspath(argv[1]), set(argv[2:]) or None,
                 log=lambda m: print(m, flush=True))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
