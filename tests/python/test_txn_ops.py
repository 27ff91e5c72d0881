"""CREATE / append / overwrite / RESTORE / VACUUM through dk, with delta-rs as the independent
reader and writer: delta-rs reads every version of dk's table as dk does, appends to it, and
dk reads delta-rs's commits; VACUUM lists what delta-rs's VACUUM (full mode) lists.

Data files are written with pyarrow and committed with dk.Transaction (dk's own Parquet
writer path is tested where it lands)."""
import json
import os

import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)
import pyarrow.parquet as pq
import pytest

from test_py_support import import_dk

dk = import_dk()  # skips this module under an ASan build without LD_PRELOAD

deltalake = pytest.importorskip("deltalake")


def write_file(root, rel, table):
    full = os.path.join(root, rel)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    pq.write_table(table, full)
    return os.path.getsize(full)


def hive_escape(v):
    """Spark's ExternalCatalogUtils.escapePathName (what an engine names directories)."""
    esc = set('"#%\'*/:=?\\\x7f{[]^') | {chr(c) for c in range(1, 32)}
    return "".join("%%%02X" % ord(c) if c in esc else c for c in v)


def stats_for(table):
    mins = {c: pa.compute.min(table[c]).as_py() for c in table.column_names if c != "p"}
    maxs = {c: pa.compute.max(table[c]).as_py() for c in table.column_names if c != "p"}
    nulls = {c: table[c].null_count for c in table.column_names if c != "p"}
    return json.dumps({"numRecords": table.num_rows, "minValues": mins, "maxValues": maxs,
                       "nullCount": nulls})


def append(t, root, rows, part, n, mode="Append", replace_where=None):
    x = t.transaction(operation="WRITE",
                      operation_parameters={"mode": mode, "partitionBy": '["p"]'}
                      if replace_where is None else
                      {"mode": mode, "partitionBy": '["p"]', "predicate": json.dumps([replace_where])})
    if mode == "Overwrite":
        for i in x.read_files(replace_where):
            x.remove_file(i)
    data = pa.table({"x": pa.array(rows, pa.int64())})
    rel = "p=%s/part-%05d.snappy.parquet" % (hive_escape(part), n)
    size = write_file(root, rel, data)
    x.add_file(rel, {"p": part}, size=size, modification_time=1, stats=stats_for(data))
    x.set_metric("numFiles", 1)
    x.set_metric("numOutputRows", len(rows))
    x.set_metric("numOutputBytes", size)
    return x.commit()["version"]


def rows_dk(root, version=None):
    s = dk.Table(root).snapshot(version=version)
    t = pa.table(s.scan())
    return sorted(zip(t["x"].to_pylist(), t["p"].to_pylist()))


def rows_rs(root, version=None):
    dt = deltalake.DeltaTable(root, version=version)
    t = dt.to_pyarrow_table()
    return sorted(zip(t["x"].to_pylist(), t["p"].to_pylist()))


def test_create_append_overwrite_restore_vacuum(tmp_path):
    root = str(tmp_path / "t")
    t = dk.Table.create(root, "x long, p string", partition_by=["p"])
    append(t, root, [1, 2], "a", 0)
    append(t, root, [3], "b", 1)
    append(t, root, [4, 5], "a", 2, mode="Overwrite", replace_where="p = 'a'")
    append(t, root, [9], "a b:c%", 3)  # a partition value that needs escaping
    latest = dk.Table(root).snapshot().version
    assert latest == 4
    for v in range(latest + 1):
        assert rows_dk(root, v) == rows_rs(root, v), v
    assert rows_dk(root) == [(3, "b"), (4, "a"), (5, "a"), (9, "a b:c%")]
    # the escaped directory and log path are the ones Spark would write
    add = [f for f in dk.Table(root).snapshot().files() if f["partition_values"]["p"] == "a b:c%"][0]
    assert add["path"].startswith("p=a b%3Ac%25/")
    with open(os.path.join(root, "_delta_log", "%020d.json" % 4)) as f:
        assert '"path":"p=a%20b%253Ac%2525/part-00003.snappy.parquet"' in f.read()
    # history as delta-rs reads it
    ops = [h["operation"] for h in deltalake.DeltaTable(root).history()]
    assert ops == ["WRITE"] * 4 + ["CREATE TABLE"]
    # RESTORE to version 2
    r = t.restore(2)
    assert r["version"] == 5
    assert rows_rs(root) == rows_dk(root) == rows_dk(root, 2)
    h = deltalake.DeltaTable(root).history(1)[0]
    assert h["operation"] == "RESTORE"
    assert h["operationMetrics"]["numRestoredFiles"] == "1"  # the p=a file of version 1
    # delta-rs appends to dk's table; dk reads it
    deltalake.write_deltalake(root, pa.table({"x": pa.array([7], pa.int64()), "p": ["c"]}),
                              mode="append")
    assert rows_dk(root) == rows_rs(root)
    assert (7, "c") in rows_dk(root)
    # dk appends to the table after delta-rs's commit
    append(dk.Table(root), root, [8], "c", 4)
    assert rows_dk(root) == rows_rs(root)
    # VACUUM: the same candidates as delta-rs's full vacuum
    mine = sorted(dk.Table(root).vacuum(retention_hours=0, dry_run=True,
                                        enforce_retention_duration=False))
    theirs = sorted(os.path.relpath(p, root) if os.path.isabs(p) else p
                    for p in deltalake.DeltaTable(root).vacuum(
                        retention_hours=0, dry_run=True, enforce_retention_duration=False,
                        full=True))
    assert mine == theirs and mine
    with pytest.raises(dk.InvalidArgument, match="deletedFileRetentionDuration"):
        dk.Table(root).vacuum(retention_hours=0)
    deleted = dk.Table(root).vacuum(retention_hours=0, dry_run=False,
                                    enforce_retention_duration=False)
    assert sorted(deleted) == mine
    assert rows_dk(root) == rows_rs(root)
    assert dk.Table(root).vacuum(retention_hours=0, dry_run=True,
                                 enforce_retention_duration=False) == []


def test_dk_reads_and_appends_to_delta_rs_table(tmp_path):
    root = str(tmp_path / "rs")
    deltalake.write_deltalake(root, pa.table({"x": pa.array([1], pa.int64()), "p": ["a"]}),
                              partition_by=["p"])
    t = dk.Table(root)
    v = append(t, root, [2], "b", 0)
    assert v == 1
    assert rows_rs(root) == rows_dk(root) == [(1, "a"), (2, "b")]


def test_create_modes_and_bad_input(tmp_path):
    root = str(tmp_path / "t")
    dk.Table.create(root, "x long, p string not null", partition_by=["p"])
    with pytest.raises(dk.InvalidArgument, match="already exists"):
        dk.Table.create(root, "x long")
    assert dk.Table.create(root, "y long", mode="ignore").snapshot().version == 0
    with pytest.raises(dk.InvalidArgument, match="schema"):
        dk.Table.create(str(tmp_path / "u"), "x lonk")
    with pytest.raises(dk.InvalidArgument, match="partition column"):
        dk.Table.create(str(tmp_path / "v"), "x long", partition_by=["nope"])
    # an unknown writer feature: refused, nothing written
    r2 = str(tmp_path / "w")
    with pytest.raises(dk.UnsupportedFeature, match="futureThing"):
        dk.Table.create(r2, "x long", properties={"delta.feature.futureThing": "supported"})
    assert not os.path.exists(os.path.join(r2, "_delta_log", "%020d.json" % 0))
    t = dk.Table(root)
    x = t.transaction()
    with pytest.raises(dk.InvalidArgument, match="DELTA_INVALID_PARTITIONING_SCHEMA"):
        x.add_file("f.parquet", {}, size=1)
    x.abort()
    assert dk.Table(root).snapshot().version == 0
    dt = deltalake.DeltaTable(root)
    assert dt.schema().fields[1].nullable is False
