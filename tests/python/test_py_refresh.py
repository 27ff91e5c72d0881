"""dk.Table keeps its latest snapshot and refreshes it incrementally (issue #19 item 6).

Oracles: delta-rs (``deltalake``) as the concurrent writer and as the reader of each version's
file set; the commit log itself (the newest commit file listed right before a query started
is the least version the query may see). A writer process commits appends, deletes, a
schema change (new column) and checkpoints while the test queries ``Table.snapshot()`` in a
loop; each answer must be at least the version committed before the call and have exactly
delta-rs's file set and schema at that version.
"""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import unquote

import pytest

from test_py_support import import_dk

dk = import_dk()
pa = pytest.importorskip("pyarrow")
deltalake = pytest.importorskip("deltalake")

WRITER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "refresh_writer.py")


def _latest_listed(path):
    log = os.path.join(path, "_delta_log")
    vs = [int(n[:20]) for n in os.listdir(log) if n.endswith(".json") and n[:20].isdigit()]
    return max(vs) if vs else -1


def _dk_files(snap):
    return sorted(unquote(f["path"]) for f in snap.files())


def _rs_files(path, v):
    t = deltalake.DeltaTable(path, version=v)
    return sorted(unquote(p) for p in t.get_add_actions(flatten=True).column("path").to_pylist())


def _rs_columns(path, v):
    return [f.name for f in deltalake.DeltaTable(path, version=v).schema().fields]


def test_refresh_with_concurrent_writer(tmp_path):
    path = str(tmp_path / "t")
    deltalake.write_deltalake(path, pa.table({"id": pa.array([0], pa.int64()),
                                              "p": pa.array(["a"])}), partition_by=["p"])
    t = dk.Table(path)
    first = t.snapshot()
    assert first.version == 0
    n = 30
    w = subprocess.Popen([sys.executable, WRITER, path, str(n)])
    seen = []
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            before = _latest_listed(path)
            s = t.snapshot()
            assert s.version >= before, "query saw v%d, v%d was committed before it" % (
                s.version, before)
            seen.append((s.version, _dk_files(s), list(s.schema.names)))
            if w.poll() is not None and s.version == _latest_listed(path):
                break
    finally:
        w.wait(timeout=120)
    assert w.returncode == 0
    final = _latest_listed(path)
    assert seen[-1][0] == final
    versions = sorted({v for v, _, _ in seen})
    assert len(versions) >= 3, versions  # the loop did observe the table moving
    checked = {}
    for v, files, cols in seen:
        if v not in checked:
            checked[v] = (_rs_files(path, v), _rs_columns(path, v))
        assert files == checked[v][0], "v%d file set differs from delta-rs" % v
        assert cols == checked[v][1], "v%d schema differs from delta-rs" % v
    # the extra column arrived mid-way: some answers have it, the last one does
    assert "x" in seen[-1][2]
    # a fresh handle agrees with the refreshed one
    assert _dk_files(dk.Table(path).snapshot()) == seen[-1][1]


def test_refresh_after_table_recreated(tmp_path):
    """The table is deleted and written again (fewer versions): the cached snapshot must not
    be served."""
    path = str(tmp_path / "t")
    for i in range(3):
        deltalake.write_deltalake(path, pa.table({"id": pa.array([i], pa.int64())}),
                                  mode="append")
    t = dk.Table(path)
    assert t.snapshot().version == 2
    shutil.rmtree(path)
    deltalake.write_deltalake(path, pa.table({"id": pa.array([7, 8], pa.int64()),
                                              "y": pa.array(["a", "b"])}))
    s = t.snapshot()
    assert s.version == 0
    assert list(s.schema.names) == ["id", "y"]
    assert _dk_files(s) == _rs_files(path, 0)
    assert pa.table(s.scan()).num_rows == 2


def test_time_travel_does_not_touch_cache(tmp_path):
    path = str(tmp_path / "t")
    for i in range(3):
        deltalake.write_deltalake(path, pa.table({"id": pa.array([i], pa.int64())}),
                                  mode="append")
    t = dk.Table(path)
    assert t.snapshot().version == 2
    assert t.snapshot(version=0).version == 0
    deltalake.write_deltalake(path, pa.table({"id": pa.array([9], pa.int64())}), mode="append")
    assert t.snapshot().version == 3
    assert pa.table(t.scan()).num_rows == 4
    assert Path(path, "_delta_log").is_dir()
