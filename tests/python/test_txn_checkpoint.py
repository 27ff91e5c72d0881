"""Checkpoints dk writes (V2, JSON top level with the actions inline, for v2Checkpoint tables):
automatic every delta.checkpointInterval commits, `_last_checkpoint` after the file, and read
by dk and delta-rs with every JSON commit before the checkpoint deleted (the checkpoint alone
must reproduce the table). Metadata cleanup deletes what that checkpoint makes unnecessary.
Spark reads the same in tests/spark/test_spark_txn_interop.py."""
import json
import os

import pyarrow as pa
import pytest

from test_py_support import import_dk

dk = import_dk()  # skips under an ASan build of the binding (see test_py_support.py)
from test_txn_ops import append, rows_dk

deltalake = pytest.importorskip("deltalake")


def rs_rows(root):
    """delta-rs's reader for these tables: its DataFusion QueryBuilder (its pyarrow path
    refuses the v2Checkpoint reader feature)."""
    dt = deltalake.DeltaTable(root)
    t = pa.table(deltalake.QueryBuilder().register("t", dt).execute("select x, p from t"))
    return sorted(zip(t["x"].to_pylist(), t["p"].to_pylist()))


def make(root, interval="5"):
    return dk.Table.create(root, "x long, p string", partition_by=["p"],
                           properties={"delta.checkpointPolicy": "v2",
                                       "delta.checkpointInterval": interval})


def test_v2_checkpoint_replaces_the_commits(tmp_path):
    root = str(tmp_path / "t")
    t = make(root)
    assert "v2Checkpoint" in t.snapshot().protocol["writer_features"]
    for i in range(7):
        append(t, root, [i], "a" if i % 2 else "b:c", i)
    append(t, root, [100], "a", 50, mode="Overwrite", replace_where="p = 'a'")
    x = t.transaction()
    x.set_app_version("stream-1", 3)
    x.commit()
    log = os.path.join(root, "_delta_log")
    names = os.listdir(log)
    cps = sorted(n for n in names if ".checkpoint." in n)
    assert [n[:20] for n in cps] == ["%020d" % 5], cps  # automatic at version 5
    with open(os.path.join(log, "_last_checkpoint")) as f:
        assert json.load(f)["version"] == 5
    # a manual checkpoint of the latest version
    r = t.checkpoint()
    assert r["version"] == 9 and r["file"].endswith(".json")
    want = rows_dk(root)
    # delete every commit up to the checkpoint: the checkpoint alone is the state
    for v in range(10):
        os.remove(os.path.join(log, "%020d.json" % v))
    assert rows_dk(root) == want
    dt = deltalake.DeltaTable(root)
    assert rs_rows(root) == want
    assert dt.version() == 9
    assert dt.protocol().writer_features and "v2Checkpoint" in dt.protocol().writer_features
    # an append after the checkpoint, read by both
    append(dk.Table(root), root, [200], "q", 60)
    assert rs_rows(root) == rows_dk(root)


def test_classic_checkpoint_replaces_the_commits(tmp_path):
    root = str(tmp_path / "c")
    for i in range(12):
        dk.write_table(root, pa.table({"x": pa.array([i], pa.int64()),
                                       "p": ["a" if i % 2 else "b:c"]}),
                       mode="append" if i else "error", partition_by=["p"])
    dk.write_table(root, pa.table({"x": pa.array([99], pa.int64()), "p": ["a"]}),
                   mode="overwrite", predicate="p = 'a'")
    log = os.path.join(root, "_delta_log")
    assert "%020d.checkpoint.parquet" % 10 in os.listdir(log)  # automatic, interval 10
    r = dk.Table(root).checkpoint()
    assert r["version"] == 12 and r["num_add_files"] == 7
    import pyarrow.parquet as pq
    cp = pq.read_table(os.path.join(log, r["file"]))
    assert set(cp.schema.names) >= {"txn", "add", "remove", "metaData", "protocol"}
    want = rows_dk(root)
    for v in range(13):
        os.remove(os.path.join(log, "%020d.json" % v))
    assert rows_dk(root) == want
    t = deltalake.DeltaTable(root).to_pyarrow_table()
    assert sorted(zip(t["x"].to_pylist(), t["p"].to_pylist())) == want
    # the tombstones of the replaceWhere are in the checkpoint
    assert cp.column("remove").drop_null().__len__() == 6


def test_metadata_cleanup(tmp_path):
    root = str(tmp_path / "m")
    t = make(root, interval="3")
    for i in range(7):
        append(t, root, [i], "a", i)
    log = os.path.join(root, "_delta_log")
    old = 1_000_000_000  # commits 0..4 are "old"
    for v in range(5):
        os.utime(os.path.join(log, "%020d.json" % v), (old, old))
    for n in os.listdir(log):
        if ".checkpoint." in n and n.startswith("%020d" % 3):
            os.utime(os.path.join(log, n), (old, old))
    want = rows_dk(root)
    assert t.cleanup_metadata(dry_run=True) == 3  # commits 0, 1, 2 (checkpoint 3 is kept)
    assert t.cleanup_metadata() == 3
    left = sorted(n for n in os.listdir(log) if n.endswith(".json") and ".checkpoint." not in n)
    assert left[0] == "%020d.json" % 3
    assert rows_dk(root) == want
    assert rs_rows(root) == want


def test_last_checkpoint_checksum(tmp_path):
    """_last_checkpoint carries delta-spark's checksum (the algorithm is checked against
    delta-spark's own files in tests/unit/test_log_lastcp.c); a file whose checksum does not
    match is ignored (the log is listed), and delta-rs reads either."""
    import hashlib
    root = str(tmp_path / "t")
    t = dk.Table.create(root, "x long, p string", partition_by=["p"])
    for i in range(3):
        append(t, root, [i], "a", i)
    t.checkpoint()
    path = os.path.join(root, "_delta_log", "_last_checkpoint")
    with open(path) as f:
        text = f.read()
    j = json.loads(text)
    # PROTOCOL.md "JSON checksum" for this flat object of integers
    canon = ",".join(sorted('"%s"=%s' % (k, v) for k, v in j.items() if k != "checksum"))
    assert j["checksum"] == hashlib.md5(canon.encode()).hexdigest()
    want = rows_dk(root)
    assert deltalake.DeltaTable(root).version() == 3
    with open(path, "w") as f:
        f.write(text.replace(j["checksum"], "0" * 32))
    assert rows_dk(root) == want and dk.Table(root).snapshot().version == 3
    assert deltalake.DeltaTable(root).version() == 3
