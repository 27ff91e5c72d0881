"""Streaming reads and the change data feed through the connector (connectors/spark:
DkMicroBatchStream, DkChangesTable over libdk's dk_stream / dk_changes), against delta-spark
in the same session.

Oracle: Spark's own Delta source. For each case the same stream runs twice, as
readStream.format("delta") and readStream.format("dk") with the same options, under
Trigger.AvailableNow into foreachBatch (not a memory sink: delta-spark's numInputRows counts
rows before deletion vectors filter them, and a memory sink cannot resume): the batches (start
and end offsets, Delta's DeltaSourceOffset JSON) and each batch's rows must be equal; the
streams Spark refuses dk refuses with the same Delta error class. A stream stopped and resumed
from its checkpoint after more commits delivers the rest exactly as Spark's does.
spark.read.option("readChangeFeed", "true") with startingVersion/endingVersion equals
format("delta")'s on every range of the table.
"""
import json
import os
import uuid

import pytest

from sparkcmp import assert_same, rows

CDF = "'delta.enableChangeDataFeed'='true'"


def q(path):
    return "delta.`%s`" % path


def _ids(spark, lo, hi, files):
    return spark.range(lo, hi, 1, files).selectExpr(
        "id", "concat('v', cast(id as string)) as v", "cast(id % 2 as int) as p")


@pytest.fixture(scope="module")
def dml_table(spark, tmp_path_factory):
    """v0 create (CDF, DVs, partitioned by p); v1, v2 appends; v3 UPDATE (DVs + cdc files);
    v4 DELETE (DVs only: the change feed infers the deletes); v5 append; v6 DELETE of whole
    files (remove actions only)."""
    path = str(tmp_path_factory.mktemp("stream") / "dml")
    spark.sql(f"CREATE TABLE {q(path)} (id BIGINT, v STRING, p INT) USING delta "
              f"PARTITIONED BY (p) TBLPROPERTIES ({CDF}, 'delta.enableDeletionVectors'='true')")
    _ids(spark, 0, 30, 3).write.format("delta").mode("append").save(path)
    _ids(spark, 30, 50, 2).write.format("delta").mode("append").save(path)
    spark.sql(f"UPDATE {q(path)} SET v = concat(v, '-u') WHERE id % 5 = 0")
    spark.sql(f"DELETE FROM {q(path)} WHERE id % 7 = 1")
    _ids(spark, 50, 60, 1).write.format("delta").mode("append").save(path)
    spark.sql(f"DELETE FROM {q(path)} WHERE p = 1")
    return path


@pytest.fixture(scope="module")
def append_table(spark, tmp_path_factory):
    """Appends only (v0 create, v1..v4 appends of 1-3 files), unpartitioned."""
    path = str(tmp_path_factory.mktemp("stream") / "appends")
    spark.sql(f"CREATE TABLE {q(path)} (id BIGINT, v STRING, p INT) USING delta "
              f"TBLPROPERTIES ({CDF})")
    for i, files in enumerate([3, 1, 2, 1]):
        _ids(spark, i * 100, i * 100 + 40, files).write.format("delta").mode("append").save(path)
    return path


def _run(spark, fmt, path, opts, ckpt):
    """One AvailableNow run into foreachBatch: [(start offset, end offset, rows)] per batch,
    offsets as parsed JSON, rows as a sorted list (numInputRows is not compared: delta-spark
    counts the rows its scan read before deletion vectors filter them)."""
    r = spark.readStream.format(fmt)
    for k, v in opts.items():
        r = r.option(k, v)
    got = {}

    def each(df, batch_id):
        got[batch_id] = sorted(rows(df).elements())

    query = (r.load(path).writeStream.foreachBatch(each)
             .option("checkpointLocation", ckpt).trigger(availableNow=True).start())
    try:
        query.awaitTermination()
    finally:
        query.stop()
    offsets = {}
    for p in query.recentProgress:
        src = p["sources"][0]
        offsets[p["batchId"]] = tuple(json.loads(src[k]) if src[k] else None
                                      for k in ("startOffset", "endOffset"))
    return [offsets.get(b, (None, None)) + (got[b],) for b in sorted(got)]


def _error(spark, fmt, path, opts, ckpt):
    with pytest.raises(Exception) as e:
        _run(spark, fmt, path, opts, ckpt)
    return str(e.value)


def _both(spark, tmp_path, path, opts, tag):
    d = _run(spark, "delta", path, opts, str(tmp_path / f"{tag}-delta"))
    k = _run(spark, "dk", path, opts, str(tmp_path / f"{tag}-dk"))
    return d, k


STREAMS = [
    ("append/default", "append_table", {}),
    ("append/maxFiles=1", "append_table", {"maxFilesPerTrigger": "1"}),
    ("append/maxFiles=2", "append_table", {"maxFilesPerTrigger": "2"}),
    ("append/maxBytes=1", "append_table", {"maxBytesPerTrigger": "1"}),
    ("append/maxBytes=1k+maxFiles=3", "append_table",
     {"maxBytesPerTrigger": "1k", "maxFilesPerTrigger": "3"}),
    ("append/startingVersion=2", "append_table", {"startingVersion": "2"}),
    ("append/startingVersion=latest", "append_table", {"startingVersion": "latest"}),
    ("dml/ignoreChanges", "dml_table", {"ignoreChanges": "true", "maxFilesPerTrigger": "1"}),
    ("dml/skipChangeCommits", "dml_table", {"skipChangeCommits": "true"}),
    ("dml/skipChangeCommits from v2", "dml_table",
     {"skipChangeCommits": "true", "startingVersion": "2", "maxFilesPerTrigger": "1"}),
    ("dml/cdf", "dml_table", {"readChangeFeed": "true"}),
    ("dml/cdf maxFiles=1", "dml_table", {"readChangeFeed": "true", "maxFilesPerTrigger": "1"}),
    ("dml/cdf from v3", "dml_table", {"readChangeFeed": "true", "startingVersion": "3"}),
    ("dml/cdf maxBytes=1", "dml_table", {"readChangeFeed": "true", "maxBytesPerTrigger": "1",
                                         "startingVersion": "1"}),
    ("append/cdf initial snapshot", "append_table",
     {"readChangeFeed": "true", "maxFilesPerTrigger": "2"}),
]


# make test samples the matrix (CI time); DK_SPARK_STREAM_ALL=1 runs every case
SAMPLED = {"append/maxFiles=1", "append/maxBytes=1k+maxFiles=3", "append/startingVersion=latest",
           "dml/ignoreChanges", "dml/skipChangeCommits from v2", "dml/cdf maxFiles=1",
           "dml/cdf maxBytes=1", "append/cdf initial snapshot"}
if os.environ.get("DK_SPARK_STREAM_ALL", "") in ("", "0"):
    STREAMS = [s for s in STREAMS if s[0] in SAMPLED]


@pytest.mark.parametrize("what,table,opts", STREAMS, ids=[s[0] for s in STREAMS])
def test_stream_batches_equal_delta(spark, tmp_path, request, what, table, opts):
    path = request.getfixturevalue(table)
    d, k = _both(spark, tmp_path, path, opts, "s")
    assert [b[:2] for b in k] == [b[:2] for b in d], what  # the batches' offsets
    assert k == d, what  # and their rows
    if opts.get("startingVersion") != "latest":
        assert sum(len(b[2]) for b in d) > 0, "the case streams nothing"


@pytest.mark.parametrize("opts,cls", [
    ({"startingVersion": "1"}, "DELTA_SOURCE_TABLE_IGNORE_CHANGES"),  # v3: UPDATE
    ({"startingVersion": "6"}, "DELTA_SOURCE_IGNORE_DELETE"),  # v6: removes only
    ({"startingVersion": "99"}, None),
    ({"startingVersion": "x"}, "DELTA_ILLEGAL_OPTION"),
    ({"startingVersion": "1", "startingTimestamp": "2020-01-01"},
     "DELTA_STARTING_VERSION_AND_TIMESTAMP_BOTH_SET"),
])
def test_stream_errors_as_delta(spark, tmp_path, dml_table, opts, cls):
    d = _error(spark, "delta", dml_table, opts, str(tmp_path / "e-delta"))
    k = _error(spark, "dk", dml_table, opts, str(tmp_path / "e-dk"))
    if cls:
        assert cls in d, d
        assert cls in k, k
    else:  # a version after the latest: Spark's message names the version; so must dk's
        assert "99" in d and "99" in k, (d, k)


def test_stream_resumes_from_checkpoint(spark, tmp_path):
    """Two runs over one checkpoint each (dk's, Spark's), with commits between them: the
    second run delivers exactly the new files, in the same batches as Spark's."""
    path = str(tmp_path / "resume")
    _ids(spark, 0, 20, 2).write.format("delta").save(path)
    opts = {"maxFilesPerTrigger": "1"}
    first = _both(spark, tmp_path, path, opts, "r")
    assert first[0] == first[1]
    for i in range(2):
        _ids(spark, 100 + i * 10, 110 + i * 10, 2).write.format("delta").mode("append").save(path)
    d, k = _both(spark, tmp_path, path, opts, "r")
    assert k == d
    assert len(d) == 4 and sum(len(b[2]) for b in d) == 20


CDF_RANGES = [(1, 6), (1, None), (2, 4), (3, 3), (4, 4), (4, 6), (6, 6), (0, 2)]


@pytest.mark.parametrize("start,end", CDF_RANGES)
def test_batch_change_feed_equals_delta(spark, dml_table, start, end):
    def read(fmt):
        r = spark.read.format(fmt).option("readChangeFeed", "true").option("startingVersion", start)
        if end is not None:
            r = r.option("endingVersion", end)
        return r.load(dml_table)
    assert_same(read("dk"), read("delta"), f"[{start}, {end}]")
    # a projection (metadata columns first) and a filter over them
    cols = ["_commit_version", "_change_type", "id"]
    assert_same(read("dk").select(*cols).where("_change_type != 'insert'"),
                read("delta").select(*cols).where("_change_type != 'insert'"), "projection")


def test_batch_change_feed_errors_as_delta(spark, dml_table):
    def err(fmt, **o):
        r = spark.read.format(fmt).option("readChangeFeed", "true")
        for k, v in o.items():
            r = r.option(k, v)
        with pytest.raises(Exception) as e:
            r.load(dml_table).collect()
        return str(e.value)
    for o, cls in [({"startingVersion": 4, "endingVersion": 2}, "DELTA_INVALID_CDC_RANGE"),
                   ({"startingVersion": 50}, "DELTA_CDC_START_VERSION_AFTER_LATEST"),
                   ({}, "DELTA_NO_START_FOR_CDC_READ")]:
        d, k = err("delta", **o), err("dk", **o)
        assert cls in d, d
        assert cls in k, k
