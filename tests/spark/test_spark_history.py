"""Commit timestamps where commit-file mtimes do not increase (copied or restored logs, coarse
clocks, object stores), against delta-spark: DESCRIBE HISTORY [LIMIT n] and timestampAsOf.

Without in-commit timestamps delta-spark takes a commit's time from its file's mtime and makes
the times it lists strictly increasing (a time not after its predecessor's becomes the
predecessor's + 1 ms, DeltaHistoryManager.monotonizeCommitTimestamps). DESCRIBE HISTORY LIMIT n
lists only the newest n commits, so it makes them increasing from the oldest of those: the same
version can show different times with and without a limit, and dk's `history(limit=n)` must
show Spark's. The tables are copies of the interop harness's `tt_mtime` (6 commits, no ICT)
with their commit mtimes rewritten."""
import datetime
import os
import shutil

import pytest

import dk
from conftest import interop_dir

BASE = 1704067200000  # 2024-01-01T00:00:00Z in ms
SKEW = 10_000_000  # ms ahead of the rest of the log (_cdf_table)

# commit-file mtimes (ms) of versions 0..5
MTIMES = {
    "equal": [BASE + 450] * 6,
    "backwards": [BASE + 1000, BASE + 500, BASE + 3000, BASE + 2000, BASE + 2000, BASE + 1999],
}


def _table(tmp_path, kind):
    src = os.path.join(interop_dir(), "tt_mtime", "delta")
    if not os.path.exists(os.path.join(interop_dir(), "tt_mtime", "DONE")):
        pytest.skip("interop table tt_mtime not built (scripts/interop_tables.sh)")
    dst = str(tmp_path / kind)
    shutil.copytree(src, dst)
    log = os.path.join(dst, "_delta_log")
    for v, ms in enumerate(MTIMES[kind]):
        os.utime(os.path.join(log, "%020d.json" % v), ns=(ms * 1000000,) * 2)
    return dst


def _ms(ts):
    return int(ts.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000 + 0.5)


def spark_history(spark, path, limit=None):
    q = "DESCRIBE HISTORY delta.`%s`" % path + (" LIMIT %d" % limit if limit else "")
    return [(r[0], _ms(r[1])) for r in spark.sql(q).select("version", "timestamp").collect()]


@pytest.mark.parametrize("kind", sorted(MTIMES))
def test_history_timestamps_like_spark(spark, tmp_path, kind):
    p = _table(tmp_path, kind)
    t = dk.Table(p)
    full = spark_history(spark, p)
    assert len(full) == 6
    for limit in (None, 1, 3, 6, 10):
        want = spark_history(spark, p, limit) if limit else full
        got = [(h["version"], h["commit_timestamp"]) for h in t.history(limit=limit)]
        assert got == want, f"{kind} LIMIT {limit}"
    if kind == "equal":  # the case that shows it: Spark gives 450/451/452 to the last three
        assert spark_history(spark, p, 3) == [(5, BASE + 452), (4, BASE + 451), (3, BASE + 450)]


@pytest.mark.parametrize("kind", sorted(MTIMES))
def test_timestamp_travel_like_spark(spark, tmp_path, kind):
    """Time travel resolves against the times of the whole log (DESCRIBE HISTORY without a
    limit), at and just before each of them and after the latest, as timestampAsOf does (its
    resolution, DeltaHistoryManager.getActiveCommitAtTime, asked directly: no scan job)."""
    p = _table(tmp_path, kind)
    t = dk.Table(p)
    jvm = spark._jvm
    hist = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, p).history()
    times = sorted({ts for _, ts in spark_history(spark, p)})
    for ms in sorted({x + d for x in times for d in (-1, 0)} | {times[-1] + 1}):
        try:  # (time, catalog table, canReturnLastCommit, mustBeRecreatable, canReturnEarliest)
            want = hist.getActiveCommitAtTime(jvm.java.sql.Timestamp(ms), jvm.scala.Option.apply(None),
                                              False, True, False).version()
        except Exception as e:  # before the first or after the latest commit
            assert "TIMESTAMP" in str(e).upper(), e
            with pytest.raises(dk.DkError):
                t.snapshot(timestamp=ms)
            continue
        assert t.snapshot(timestamp=ms).version == want, f"{kind} at {ms}"


def _cdf_table(tmp_path, base, n=105):
    """n commits of one single-row file each, change data feed on; the first three commits'
    mtimes lie SKEW ms ahead (a skewed clock), the rest increase from base (recent: Spark
    reads no change feed past delta.deletedFileRetentionDuration)."""
    import json
    import pyarrow as pa
    import pyarrow.parquet as pq
    root = tmp_path / "cdf"
    log = root / "_delta_log"
    log.mkdir(parents=True)
    schema = {"type": "struct",
              "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
    for v in range(n):
        name = "part-%05d.parquet" % v
        pq.write_table(pa.table({"id": pa.array([v], pa.int64())}), root / name)
        lines = [{"commitInfo": {"timestamp": base + v, "operation": "WRITE",
                                 "operationParameters": {"mode": "Append"}}}]
        if v == 0:
            lines += [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 4}},
                      {"metaData": {"id": "cdf-lookback", "format": {"provider": "parquet",
                                                                     "options": {}},
                                    "schemaString": json.dumps(schema), "partitionColumns": [],
                                    "configuration": {"delta.enableChangeDataFeed": "true"},
                                    "createdTime": base}}]
        lines.append({"add": {"path": name, "partitionValues": {},
                              "size": (root / name).stat().st_size,
                              "modificationTime": base + v, "dataChange": True}})
        p = log / ("%020d.json" % v)
        p.write_text("".join(json.dumps(x) + "\n" for x in lines))
        ms = base + SKEW + v if v < 3 else base + 10 * v
        os.utime(p, ns=(ms * 1000000,) * 2)
    return str(root)


def test_change_feed_commit_timestamps_like_spark(spark, tmp_path):
    """_commit_timestamp of readChangeFeed: delta-spark makes mtimes increasing from 100
    commits before the range's start (CDCReaderBase.getNonICTTimestampsByVersion), so a
    skewed clock at v0..v2 shows in a range starting at 50 and not in one starting at 104.
    dk's commit ranges (dk_commit_range_timestamp, via tests/tools/commit_times.c) agree."""
    import json
    import subprocess
    tool = os.path.join(os.path.dirname(__file__), "..", "..",
                        os.environ.get("DK_BUILD", "build"), "dk_test_commit_times")
    if not os.path.exists(tool):
        pytest.skip("dk_test_commit_times not built")
    import time
    base = int(time.time() * 1000) - 3_600_000
    p = _cdf_table(tmp_path, base)
    seen = set()
    for a, b in ((0, 2), (50, 52), (102, 104), (104, 104)):
        rows = spark.read.format("delta").option("readChangeFeed", "true") \
            .option("startingVersion", a).option("endingVersion", b).load(p) \
            .select("_commit_version", "_commit_timestamp").distinct().collect()
        want = {str(r[0]): _ms(r[1]) for r in rows}
        out = subprocess.run([tool, p, str(a), str(b)], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout) == want, (a, b)
        seen.add(want[str(b)] > base + SKEW)
    assert seen == {True, False}  # the skew shows in some ranges and not in others
