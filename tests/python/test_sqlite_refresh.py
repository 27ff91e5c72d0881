"""The SQLite `delta` virtual table follows the table (issue #19 item 6): without version= or
timestamp= its snapshot is refreshed incrementally when a statement first opens it.

Oracles: delta-rs as the concurrent writer (tests/python/refresh_writer.py: appends, deletes,
a new column, checkpoints) and as the reader of each version (row count and sum of ids); the
commit log (the newest commit listed right before and right after each statement). Every
statement's answer must equal delta-rs's answer at a version between those two, and the last
one the final version's. build/dk_sqlite.so is loaded into Debian's /usr/bin/python3 (the
venv's interpreter cannot load extensions), as in test_sqlite_ext_tvf.py.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

import dkharness as h

SYSTEM_PYTHON = "/usr/bin/python3"
WRITER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "refresh_writer.py")

HOST = r"""
import json, os, sqlite3, sys, time
ext, path, stop, pinned = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
con = sqlite3.connect(":memory:")
con.enable_load_extension(True)
con.load_extension(ext)
q = "'" + path.replace("'", "''") + "'"
con.execute(f"CREATE VIRTUAL TABLE t USING delta({q})")
if pinned:
    con.execute(f"CREATE VIRTUAL TABLE t0 USING delta({q}, version=0)")
def latest():
    log = os.path.join(path, "_delta_log")
    return max(int(n[:20]) for n in os.listdir(log) if n.endswith(".json") and n[:20].isdigit())
out = []
deadline = time.time() + 120
while time.time() < deadline:
    done = os.path.exists(stop)
    before = latest()
    # one statement, three cursors on t (the outer scan and a self-join in a subquery,
    # opened at different points of the program): all read one version
    n, s, j = con.execute("SELECT count(*), coalesce(sum(id), 0), "
                          "(SELECT count(*) FROM t a JOIN t b ON a.id = b.id) FROM t").fetchone()
    after = latest()
    rec = {"before": before, "after": after, "n": n, "s": s, "join": j}
    if pinned:
        rec["v0"] = con.execute("SELECT count(*) FROM t0").fetchone()[0]
    out.append(rec)
    if done:
        break
print(json.dumps(out))
"""


def _ext():
    p = h.build_dir() / "dk_sqlite.so"
    if not p.exists():
        pytest.skip("build/dk_sqlite.so not built")
    if subprocess.run([SYSTEM_PYTHON, "-c", "import sqlite3; sqlite3.connect(':memory:')"
                       ".enable_load_extension(True)"], capture_output=True).returncode:
        pytest.skip("no Python with sqlite3 extension loading")
    return str(p)


def _answer(path, v):
    t = DeltaTable(path, version=v).to_pyarrow_table(columns=["id"])
    ids = t.column("id").to_pylist()
    return len(ids), sum(ids)


def test_vtab_follows_concurrent_writer(tmp_path):
    ext = _ext()
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"id": pa.array([-1], pa.int64()), "p": pa.array(["a"])}),
                    partition_by=["p"])
    stop = str(tmp_path / "stop")
    w = subprocess.Popen([sys.executable, WRITER, path, "30"])
    host = subprocess.Popen([SYSTEM_PYTHON, "-c", HOST, ext, path, stop, "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=h.sqlite_host_env())
    try:
        assert w.wait(timeout=180) == 0
    finally:
        Path(stop).touch()
    out, err = host.communicate(timeout=180)
    assert host.returncode == 0, err
    recs = json.loads(out)
    final = recs[-1]["after"]
    answers = {}
    moved = set()
    for r in recs:
        ok = []
        for v in range(r["before"], r["after"] + 1):
            if v not in answers:
                answers[v] = _answer(path, v)
            if answers[v] == (r["n"], r["s"]):
                ok.append(v)
        assert ok, "statement answered %r; delta-rs at v%d..v%d: %r" % (
            (r["n"], r["s"]), r["before"], r["after"],
            [answers[v] for v in range(r["before"], r["after"] + 1)])
        assert r["join"] == r["n"]  # ids are unique: every cursor read the same version
        assert r["v0"] == 1          # a pinned version does not move
        moved.add(ok[-1])
    assert (recs[-1]["n"], recs[-1]["s"]) == _answer(path, final)
    assert len(moved) >= 3, moved


def test_vtab_declared_column_changes_type(tmp_path):
    """A declared column whose type changes (overwrite with a new schema) is an error naming
    the column and the version, not wrong values; a new column stays hidden but the declared
    ones keep working."""
    ext = _ext()
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"id": pa.array([1, 2], pa.int64())}))
    script = r"""
import os, sqlite3, sys, subprocess, json
ext, path, py, = sys.argv[1], sys.argv[2], sys.argv[3]
plain = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
con = sqlite3.connect(":memory:")
con.enable_load_extension(True)
con.load_extension(ext)
con.execute("CREATE VIRTUAL TABLE t USING delta('%s')" % path)
res = [con.execute("SELECT count(*) FROM t").fetchone()[0]]
def write(code):
    subprocess.run([py, "-c", code], check=True, env=plain)
write("import pyarrow as pa; from deltalake import write_deltalake; "
      "write_deltalake(%r, pa.table({'id': pa.array([3], pa.int64()), 'y': pa.array(['n'])}), "
      "mode='append', schema_mode='merge')" % path)
res.append(con.execute("SELECT count(*), sum(id) FROM t").fetchone())
write("import pyarrow as pa; from deltalake import write_deltalake; "
      "write_deltalake(%r, pa.table({'id': pa.array(['x'])}), mode='overwrite', "
      "schema_mode='overwrite')" % path)
try:
    con.execute("SELECT count(*) FROM t").fetchone()
    res.append(None)
except sqlite3.Error as e:
    res.append(str(e))
print(json.dumps(res))
"""
    r = subprocess.run([SYSTEM_PYTHON, "-c", script, ext, path, sys.executable],
                       capture_output=True, text=True, timeout=120, env=h.sqlite_host_env())
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res[0] == 2
    assert res[1] == [3, 6]
    assert res[2] and "column \"id\"" in res[2] and "version 2" in res[2], res[2]
