"""The SQLite extension's table-valued functions outside `dk sql`: build/dk_sqlite.so loaded into
Python's sqlite3 module (enable_load_extension + load_extension), over the delta-rs-written
sample table (connectors/sqlite/make_sample.py), checked against delta-rs itself:

* `delta_files('path' [, version])` = delta-rs's add actions (path, size, partition values,
  record count) at the latest version and at version 0;
* `delta_history('path')` = delta-rs's history (versions, operations);
* `CREATE VIRTUAL TABLE t USING delta('path' [, version=N])` = delta-rs's row count and id sum,
  with pushdown (`delta_stats()` shows the partition pruning of `region = 'eu'`);
* `delta_scan('path')` cannot work outside `dk sql` (SQLite fixes a table-valued function's
  columns before it sees the path): it fails with an error naming the alternative.

Python's sqlite3 needs extension loading, which the venv's interpreter lacks; Debian's
/usr/bin/python3 has it (as in test_sqlite_manifest.py). Spark's answers for the same functions
are checked by tests/interop/test_sqlite_ext_vs_spark.py.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable

import dkharness as h

ROOT = Path(__file__).resolve().parents[2]
SYSTEM_PYTHON = "/usr/bin/python3"

HOST = r"""
import json, sqlite3, sys
ext, path = sys.argv[1], sys.argv[2]
con = sqlite3.connect(":memory:")
con.enable_load_extension(True)
con.load_extension(ext)
q = "'" + path.replace("'", "''") + "'"
def rows(sql):
    cur = con.execute(sql)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]
out = {
    "files": rows(f"SELECT path, partition_values, size, num_records, dv_cardinality "
                  f"FROM delta_files({q})"),
    "files_v0": rows(f"SELECT path FROM delta_files({q}, 0)"),
    "history": rows(f"SELECT version, json_extract(commit_info, '$.operation') AS op "
                    f"FROM delta_history({q}) ORDER BY version"),
}
try:
    con.execute(f"SELECT count(*) FROM delta_scan({q})").fetchall()
    out["delta_scan_error"] = None
except sqlite3.Error as e:
    out["delta_scan_error"] = str(e)
con.execute(f"CREATE VIRTUAL TABLE t USING delta({q})")
con.execute(f"CREATE VIRTUAL TABLE t0 USING delta({q}, version=0)")
out["latest"] = rows("SELECT count(*) AS n, sum(id) AS s FROM t")[0]
out["v0"] = rows("SELECT count(*) AS n, sum(id) AS s FROM t0")[0]
con.execute("SELECT delta_stats(1)").fetchall()
out["eu"] = rows("SELECT count(*) AS n FROM t WHERE region = 'eu'")[0]
out["eu_stats"] = json.loads(con.execute("SELECT delta_stats()").fetchone()[0])
json.dump(out, sys.stdout)
"""



def _ext_env():
    return h.sqlite_host_env()


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
    ext = h.build_dir() / "dk_sqlite.so"
    if not ext.exists():
        pytest.skip(f"{ext} not built")
    try:
        ok = subprocess.run([SYSTEM_PYTHON, "-c", "import sqlite3; "
                             "sqlite3.connect(':memory:').enable_load_extension(True)"],
                            capture_output=True).returncode == 0
    except OSError:
        ok = False
    if not ok:
        pytest.skip("no Python with sqlite3 extension loading")
    table = tmp_path_factory.mktemp("ext") / "sales"
    subprocess.run([sys.executable, str(ROOT / "connectors/sqlite/make_sample.py"), str(table)],
                   check=True, capture_output=True)
    r = subprocess.run([SYSTEM_PYTHON, "-c", HOST, str(ext), str(table)], capture_output=True,
                       text=True, timeout=300, env=_ext_env())
    assert r.returncode == 0, r.stderr[-3000:]
    h.check_process([SYSTEM_PYTHON, "(dk_sqlite.so host)"], r.returncode, r.stderr)
    return table, json.loads(r.stdout)


def test_delta_files_equal_delta_rs(answers):
    table, got = answers
    adds = {a["path"]: a for a in
            pa.table(DeltaTable(str(table)).get_add_actions(flatten=True)).to_pylist()}
    assert {r["path"] for r in got["files"]} == set(adds)
    for r in got["files"]:
        a = adds[r["path"]]
        assert json.loads(r["partition_values"]) == {"region": a["partition.region"]}
        assert r["size"] == a["size_bytes"] and r["num_records"] == a["num_records"]
        assert r["dv_cardinality"] == 0
    v0 = pa.table(DeltaTable(str(table), version=0).get_add_actions(flatten=True))
    assert sorted(r["path"] for r in got["files_v0"]) == sorted(v0.column("path").to_pylist())


def test_delta_history_equals_delta_rs(answers):
    table, got = answers
    hist = sorted(DeltaTable(str(table)).history(), key=lambda c: c["version"])
    assert [(r["version"], r["op"]) for r in got["history"]] == \
        [(c["version"], c["operation"]) for c in hist]


def test_virtual_tables_read_delta_rs_rows_with_pushdown(answers):
    table, got = answers
    for key, version in (("latest", None), ("v0", 0)):
        t = DeltaTable(str(table), version=version).to_pyarrow_table(columns=["id", "region"])
        assert got[key] == {"n": t.num_rows, "s": pc.sum(t.column("id")).as_py()}, key
    t = DeltaTable(str(table)).to_pyarrow_table(columns=["region"])
    assert got["eu"]["n"] == pc.sum(pc.equal(t.column("region"), "eu")).as_py()
    st = got["eu_stats"]
    assert st["scans"] == 1 and st["files_pruned_partition"] == 2 * st["files_selected"]


def test_delta_scan_outside_dk_sql_names_the_alternative(answers):
    _, got = answers
    err = got["delta_scan_error"]
    assert err and "CREATE VIRTUAL TABLE" in err and "dk sql" in err, err
