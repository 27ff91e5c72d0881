"""The connector's snapshot cache (connectors/spark SnapshotCache): the latest snapshot of each
table path is kept between queries and refreshed incrementally, never stale.

Oracles: delta-rs as a concurrent writer (tests/python/refresh_writer.py: appends, deletes, a
new column, checkpoints) and as the reader of each version (row count, sum of ids); the
commit log (the newest commit listed right before and after each query). Each query through
format("dk") and through the dk catalog must equal delta-rs at a version committed between its
start and end, and the cache must actually refresh (its counters move), across a re-created
table and past its LRU limit.
"""
import os
import shutil
import subprocess
import sys

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

HERE = os.path.dirname(os.path.abspath(__file__))
WRITER = os.path.join(os.path.dirname(HERE), "python", "refresh_writer.py")


def _latest(path):
    log = os.path.join(path, "_delta_log")
    return max(int(n[:20]) for n in os.listdir(log) if n.endswith(".json") and n[:20].isdigit())


def _answer(path, v):
    ids = DeltaTable(path, version=v).to_pyarrow_table(columns=["id"]).column("id").to_pylist()
    return len(ids), sum(ids)


def _cache_stats(spark):
    return list(spark._jvm.io.dk.spark.SnapshotCache.stats())


def test_queries_follow_concurrent_writer(spark, tmp_path):
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"id": pa.array([-1], pa.int64()), "p": pa.array(["a"])}),
                    partition_by=["p"])
    assert spark.read.format("dk").load(path).count() == 1  # warm: JIT, jar load, first scan
    w = subprocess.Popen([sys.executable, WRITER, path, "16", "0.7"])
    recs = []
    try:
        while True:
            done = w.poll() is not None
            before = _latest(path)
            r1 = spark.read.format("dk").load(path).selectExpr("count(*)", "coalesce(sum(id), 0)")\
                .collect()[0]
            r2 = spark.sql("SELECT count(*), coalesce(sum(id), 0) FROM dk.`%s`" % path).collect()[0]
            recs.append((before, _latest(path), (r1[0], r1[1]), (r2[0], r2[1])))
            if done:
                break
    finally:
        w.wait(timeout=300)
    assert w.returncode == 0
    answers, seen = {}, set()
    for before, after, a1, a2 in recs:
        for got in (a1, a2):
            ok = [v for v in range(before, after + 1)
                  if answers.setdefault(v, _answer(path, v)) == got]
            assert ok, "query answered %r; delta-rs at v%d..v%d: %r" % (
                got, before, after, [answers[v] for v in range(before, after + 1)])
            seen.add(ok[-1])
    final = _latest(path)
    assert recs[-1][2] == recs[-1][3] == _answer(path, final)
    assert len(seen) >= 2, seen
    n, hits, refreshes, loads = _cache_stats(spark)
    assert refreshes >= 1 and loads >= 1


def test_recreated_table_and_lru(spark, tmp_path):
    path = str(tmp_path / "t")
    for i in range(3):
        write_deltalake(path, pa.table({"id": pa.array([i], pa.int64())}), mode="append")
    assert spark.read.format("dk").load(path).count() == 3
    shutil.rmtree(path)
    write_deltalake(path, pa.table({"id": pa.array([7, 8], pa.int64()), "y": pa.array(["a", "b"])}))
    df = spark.read.format("dk").load(path)
    assert df.columns == ["id", "y"]
    assert sorted(r[0] for r in df.select("id").collect()) == [7, 8]
    # more tables than the cache holds (default 32): answers stay right, the cache stays bounded
    paths = []
    for i in range(40):
        p = str(tmp_path / ("m%d" % i))
        write_deltalake(p, pa.table({"id": pa.array(range(i + 1), pa.int64())}))
        paths.append(p)
    for i, p in enumerate(paths + paths[:5]):
        assert spark.read.format("dk").load(p).count() == (i % 40) + 1
    assert _cache_stats(spark)[0] <= 32
