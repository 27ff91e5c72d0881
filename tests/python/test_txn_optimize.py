"""OPTIMIZE (Table.optimize, dk optimize) on tables dk wrote: delta-rs reads the same rows at
every version, sees an OPTIMIZE commit whose file actions all have dataChange=false, and
delta-rs' own compaction of the same table ends with the same files per partition."""
import json
import os
import shutil

import pyarrow as pa
import pytest

from test_py_support import import_dk  # noqa: E402
dk = import_dk()

deltalake = pytest.importorskip("deltalake")


def rs(root, version=None):
    t = deltalake.DeltaTable(root, version=version).to_pyarrow_table()
    return sorted((r["x"], r["p"]) for r in t.to_pylist())


def mine(root, version=None):
    t = pa.table(dk.Table(root).snapshot(version=version).scan())
    return sorted((r["x"], r["p"]) for r in t.to_pylist())


def files_per_partition(root):
    out = {}
    for f in dk.Table(root).snapshot().files():
        p = next(iter(f["partition_values"].values()))
        out[p] = out.get(p, 0) + 1
    return out


def commit(root, v):
    with open(os.path.join(root, "_delta_log", "%020d.json" % v)) as f:
        return [json.loads(line) for line in f]


def small_files_table(root):
    parts = ["a", "needs:esc%", None]
    for i in range(3):
        xs = list(range(10 * i, 10 * i + 10))
        ps = [parts[k % 3] for k in range(10)]
        dk.write_table(root, pa.table({"x": pa.array(xs, pa.int64()), "p": pa.array(ps, pa.string())}),
                       mode="append", partition_by=["p"])
    dk.write_table(root, pa.table({"x": pa.array([100], pa.int64()), "p": ["alone"]}), mode="append")


def test_optimize_read_by_delta_rs(tmp_path):
    root = str(tmp_path / "t")
    small_files_table(root)
    before = dk.Table(root).snapshot().version
    rows = mine(root)
    assert rs(root) == rows
    twin = str(tmp_path / "twin")
    shutil.copytree(root, twin)
    r = dk.Table(root).optimize()
    assert r["version"] == before + 1
    assert r["files_removed"] == 9 and r["files_added"] == 3 and r["partitions_optimized"] == 3
    for v in range(r["version"] + 1):
        assert mine(root, v) == rs(root, v), v
    assert rs(root) == rows
    # the commit as delta-spark writes it
    acts = commit(root, r["version"])
    ci = acts[0]["commitInfo"]
    assert ci["operation"] == "OPTIMIZE" and ci["isolationLevel"] == "SnapshotIsolation"
    assert ci["operationParameters"] == {"predicate": "[]", "zOrderBy": "[]", "clusterBy": "[]",
                                         "auto": False}
    assert ci["operationMetrics"]["numRemovedFiles"] == "9"
    assert ci["operationMetrics"]["numAddedFiles"] == "3"
    fa = [a.get("add") or a.get("remove") for a in acts[1:]]
    assert len(fa) == 12 and all(a["dataChange"] is False for a in fa)
    hist = deltalake.DeltaTable(root).history(1)[0]
    assert hist["operation"] == "OPTIMIZE"
    # delta-rs compacts its copy into the same files per partition
    deltalake.DeltaTable(twin).optimize.compact()
    assert files_per_partition(twin) == files_per_partition(root)
    assert files_per_partition(root) == {"a": 1, "needs:esc%": 1, None: 1, "alone": 1}
    # nothing left to compact: no commit
    assert dk.Table(root).optimize()["version"] == -1
    assert dk.Table(root).snapshot().version == r["version"]
    # delta-rs appends after dk's OPTIMIZE; dk reads what delta-rs reads
    deltalake.write_deltalake(root, pa.table({"x": pa.array([7], pa.int64()), "p": ["a"]}),
                              mode="append")
    assert mine(root) == rs(root)


def test_optimize_predicate_and_sizes(tmp_path):
    root = str(tmp_path / "t")
    small_files_table(root)
    with pytest.raises(dk.InvalidArgument, match="partition columns"):
        dk.Table(root).optimize(predicate="x > 3")
    r = dk.Table(root).optimize(predicate="p = 'a'")
    assert r["files_removed"] == 3 and r["partitions_optimized"] == 1
    assert json.loads(commit(root, r["version"])[0]["commitInfo"]["operationParameters"]
                      ["predicate"]) == ["p = 'a'"]
    assert files_per_partition(root)["needs:esc%"] == 3
    # files at least min_file_size bytes are left alone
    assert dk.Table(root).optimize(min_file_size=1)["version"] == -1
    # max_file_size smaller than two files: every bin holds one file, nothing is rewritten
    assert dk.Table(root).optimize(max_file_size=1)["version"] == -1
    assert rs(root) == mine(root)


def test_optimize_cli(dk, tmp_path):
    root = str(tmp_path / "t")
    small_files_table(root)
    rc, out, err = dk("optimize", root, "--where", "p = 'a'")
    assert rc == 0 and "3 files" in out, (out, err)
    rc, out, err = dk("optimize", root, "--where", "p = 'a'")
    assert rc == 0 and "nothing to compact" in err
    rc, out, err = dk("optimize", root, "--max-file-size", "0")
    assert rc == 2
    assert rs(root) == mine(root)
