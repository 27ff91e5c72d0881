"""Deletion vectors against the real Delta tables of the shared test data.

Oracle: the tables' expected rows (<table>.expected.jsonl, restated from the upstream Delta
tests and cross-checked with Spark/DuckDB), the data files as pyarrow reads them, and the
descriptor cardinalities written by Delta. dk's part is only `dk _dv TABLE DESCRIPTOR`, which
prints the row indexes one deletion vector deletes; everything else here (log replay, reading
Parquet, partition values, column mapping) is a small test-only reimplementation on pyarrow.
"""

import collections
import json
import os
import pathlib
import shutil
import subprocess

import pyarrow.parquet as pq
import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
TESTDATA = pathlib.Path(os.environ.get("DK_TESTDATA", REPO.parent / "shared" / "testdata"))
DK = (REPO / os.environ.get("DK_BUILD", "build") / "dk").resolve()

TABLES = [
    "delta-kernel-defaults/basic-dv-no-checkpoint",
    "delta-kernel-defaults/basic-dv-with-checkpoint",
    "delta-golden/dv-partitioned-with-checkpoint",
    "delta-golden/dv-with-columnmapping",
    "delta-golden/log-replay-dv-key-cases",
]


def run_dv(root, descriptor):
    """Deleted row indexes of one DV via the dk CLI, or raises with its stderr."""
    assert DK.exists(), f"build dk first ({DK})"
    p = subprocess.run([str(DK), "_dv", str(root), json.dumps(descriptor)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.strip())
    return json.loads(p.stdout)


def dv_id(dv):
    if dv is None:
        return None
    off = dv.get("offset")
    return dv["storageType"] + dv["pathOrInlineDv"] + ("" if off is None else f"@{off}")


def clean_dv(dv):
    if dv is None:
        return None
    out = {k: dv[k] for k in ("storageType", "pathOrInlineDv", "sizeInBytes", "cardinality")}
    if dv.get("offset") is not None:
        out["offset"] = dv["offset"]
    return out


def commit_versions(log):
    return sorted(int(p.name[:20]) for p in log.glob("*.json") if p.name[:20].isdigit())


def replay(root):
    """Live add actions (path -> add) and every DV descriptor seen, by a minimal log replay:
    the newest checkpoint when the JSON commits do not go back to version 0, then commits."""
    log = root / "_delta_log"
    versions = commit_versions(log)
    live, metadata, all_dvs = {}, None, []
    start = 0
    if versions[0] != 0:
        cps = sorted(log.glob("*.checkpoint.parquet"))
        cp = cps[-1]
        start = int(cp.name[:20]) + 1
        t = pq.read_table(cp).to_pylist()
        for row in t:
            if row.get("metaData"):
                metadata = row["metaData"]
            a = row.get("add")
            if a:
                a = dict(a)
                a["partitionValues"] = dict(a.get("partitionValues") or [])
                a["deletionVector"] = clean_dv(a.get("deletionVector"))
                live[(a["path"], dv_id(a["deletionVector"]))] = a
                if a["deletionVector"]:
                    all_dvs.append(a["deletionVector"])
    for v in versions:
        if v < start:
            continue
        for line in (log / f"{v:020d}.json").read_text().splitlines():
            if not line.strip():
                continue
            act = json.loads(line)
            if "metaData" in act:
                metadata = act["metaData"]
            if "add" in act:
                a = act["add"]
                a["deletionVector"] = clean_dv(a.get("deletionVector"))
                live[(a["path"], dv_id(a["deletionVector"]))] = a
            if "remove" in act:
                r = act["remove"]
                live.pop((r["path"], dv_id(r.get("deletionVector"))), None)
            for kind in ("add", "remove"):
                if kind in act and act[kind].get("deletionVector"):
                    all_dvs.append(clean_dv(act[kind]["deletionVector"]))
    return list(live.values()), metadata, all_dvs


def convert_partition(value, typ):
    if value is None:
        return None
    if typ in ("integer", "long", "short", "byte"):
        return int(value)
    return value


def read_rows(root, add, schema, partition_columns):
    """Rows of one data file (logical column names, partition values added)."""
    from urllib.parse import unquote
    table = pq.read_table(root / unquote(add["path"]))
    rows = []
    cols = {}
    for f in schema["fields"]:
        phys = f.get("metadata", {}).get("delta.columnMapping.physicalName", f["name"])
        if f["name"] in partition_columns:
            pv = add["partitionValues"].get(phys, add["partitionValues"].get(f["name"]))
            cols[f["name"]] = ("const", convert_partition(pv, f["type"]))
        else:
            cols[f["name"]] = ("col", table.column(phys).to_pylist())
    for i in range(table.num_rows):
        rows.append({k: (v if kind == "const" else v[i]) for k, (kind, v) in cols.items()})
    return rows


def canon(row):
    return json.dumps(row, sort_keys=True)


def check_rows(root, table):
    adds, metadata, all_dvs = replay(root)
    schema = json.loads(metadata["schemaString"])
    partition_columns = set(metadata.get("partitionColumns") or [])
    got = collections.Counter()
    n_with_dv = 0
    for add in adds:
        rows = read_rows(root, add, schema, partition_columns)
        dv = add.get("deletionVector")
        deleted = set()
        if dv:
            n_with_dv += 1
            idx = run_dv(root, dv)
            assert idx == sorted(idx)
            assert len(idx) == dv["cardinality"]
            assert all(0 <= i < len(rows) for i in idx), (add["path"], idx)
            deleted = set(idx)
        kept = [canon(r) for i, r in enumerate(rows) if i not in deleted]
        got.update(kept)
    expected = collections.Counter(
        canon(json.loads(l)) for l in (TESTDATA / (table + ".expected.jsonl")).read_text().splitlines()
        if l.strip())
    assert n_with_dv > 0
    assert got == expected


@pytest.mark.parametrize("table", TABLES)
def test_dv_rows_match_expected(table):
    check_rows(TESTDATA / table, table)


@pytest.mark.parametrize(
    "table", [t for t in TABLES if any((TESTDATA / t / "_delta_log").glob("*.checkpoint.parquet"))])
def test_dv_rows_match_expected_from_checkpoint(table, tmp_path):
    # Descriptors read from the checkpoint's Parquet struct (offset may be null there): drop the
    # JSON commits the newest checkpoint covers, in a copy (see the test data README).
    root = tmp_path / "t"
    shutil.copytree(TESTDATA / table, root)
    cp = sorted((root / "_delta_log").glob("*.checkpoint.parquet"))[-1]
    for v in commit_versions(root / "_delta_log"):
        if v <= int(cp.name[:20]):
            (root / "_delta_log" / f"{v:020d}.json").unlink()
    check_rows(root, table)


@pytest.mark.parametrize("table", TABLES)
def test_dv_every_descriptor_loads_with_its_cardinality(table):
    root = TESTDATA / table
    _, _, all_dvs = replay(root)
    assert all_dvs
    for dv in all_dvs:
        assert len(run_dv(root, dv)) == dv["cardinality"]


def test_dv_protocol_inline_example():
    # PROTOCOL.md § Deletion Vector Descriptor Schema, JSON Example 3.
    dv = {"storageType": "i", "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L",
          "sizeInBytes": 40, "cardinality": 6}
    assert run_dv("/nonexistent", dv) == [3, 4, 7, 11, 18, 29]


@pytest.fixture
def dv_copy(tmp_path):
    src = TESTDATA / "delta-kernel-defaults/basic-dv-no-checkpoint"
    dst = tmp_path / "t"
    shutil.copytree(src, dst)
    name = "deletion_vector_899cef78-06b3-4c14-b024-03860e62cd40.bin"
    desc = {"storageType": "u", "pathOrInlineDv": "IjB3V2d3#qUP%s94R0WF", "offset": 1,
            "sizeInBytes": 36, "cardinality": 2}
    return dst, dst / name, desc


@pytest.mark.parametrize("damage,word", [
    (lambda b: b[:20] + bytes([b[20] ^ 1]) + b[21:], "checksum"),
    (lambda b: b[:30], "offset 1"),
    (lambda b: b[:1] + (40).to_bytes(4, "big") + b[5:], "sizeInBytes"),
    (lambda b: bytes([2]) + b[1:], "version"),
])
def test_dv_corrupt_files_fail_cleanly(dv_copy, damage, word):
    root, path, desc = dv_copy
    assert len(run_dv(root, desc)) == desc["cardinality"]
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(RuntimeError) as e:
        run_dv(root, desc)
    msg = str(e.value)
    assert "corrupt" in msg and word in msg and path.name in msg


def test_dv_lying_descriptor_fails_cleanly(dv_copy):
    root, path, desc = dv_copy
    for key, value, word in [("cardinality", 3, "cardinality"), ("sizeInBytes", 35, "sizeInBytes"),
                             ("sizeInBytes", 1 << 30, "does not fit")]:
        d = dict(desc, **{key: value})
        with pytest.raises(RuntimeError) as e:
            run_dv(root, d)
        assert "corrupt" in str(e.value) and word in str(e.value)
