"""dk's SQLite extension (build/dk_sqlite.so) loaded into hosts that are not `dk sql`: Python's
sqlite3 module (enable_load_extension + load_extension) and the sqlite3 shell (`.load`).

In Python's sqlite3, over every interop table, against Spark's oracle (oracle.json):
* `delta_files('root', v)` at every version = Spark's file set at v (path, size, partition
  values, numRecords, stats, DV cardinality);
* `delta_history('root')` = Spark's DESCRIBE HISTORY (versions, operation, commit timestamp);
* `CREATE VIRTUAL TABLE t USING delta('root')` returns Spark's row count at the latest version,
  and `_row_id`/`_row_commit_version` equal Spark's on row-tracking tables;
* `delta_scan('root')` cannot work outside `dk sql` (SQLite fixes a table-valued function's
  columns before it sees the path): it fails with an error that names the alternative.
The sqlite3 shell runs the same table-valued functions on one table.

Python's sqlite3 needs extension loading, which the venv's interpreter lacks; Debian's
/usr/bin/python3 has it (the same choice as tests/python/test_sqlite_manifest.py).
"""
import json
import os
import shutil
import subprocess
import sys
import urllib.parse

import pytest

import gen_tables

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "python"))
import dkharness as h  # noqa: E402

pytestmark = pytest.mark.interop

SYSTEM_PYTHON = "/usr/bin/python3"

HOST_SCRIPT = r"""
import json, sqlite3, sys
ext, todo = sys.argv[1], json.load(sys.stdin)
con = sqlite3.connect(":memory:")
con.enable_load_extension(True)
con.load_extension(ext)
out = {}
def q(s):
    return "'" + s.replace("'", "''") + "'"
def rows(sql):
    cur = con.execute(sql)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]
for i, t in enumerate(todo):
    r = {"files": {}}
    root = q(t["root"])
    for v in t["versions"]:
        r["files"][str(v)] = rows(f"SELECT path, partition_values, size, num_records, "
                                  f"dv_cardinality, stats FROM delta_files({root}, {v})")
    r["history"] = rows(f"SELECT version, timestamp, commit_info FROM delta_history({root})")
    try:
        con.execute(f"SELECT count(*) FROM delta_scan({root})").fetchall()
        r["delta_scan_error"] = None
    except sqlite3.Error as e:
        r["delta_scan_error"] = str(e)
    con.execute(f'CREATE VIRTUAL TABLE "t{i}" USING delta({root})')
    r["count"] = con.execute(f'SELECT count(*) FROM "t{i}"').fetchone()[0]
    if t["row_tracking"]:
        r["row_tracking"] = rows(f'SELECT id, _row_id, _row_commit_version FROM "t{i}"')
    out[t["name"]] = r
json.dump(out, sys.stdout)
"""

TABLES = gen_tables.table_names()


def _ext_path():
    p = h.build_dir() / "dk_sqlite.so"
    if not p.exists():
        pytest.skip(f"{p} not built")
    return p




def load(oracle_dir, name):
    with open(os.path.join(oracle_dir, name, "oracle.json"), encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def host_answers(oracle_dir):
    ext = _ext_path()
    ok = subprocess.run([SYSTEM_PYTHON, "-c", "import sqlite3; "
                         "sqlite3.connect(':memory:').enable_load_extension(True)"],
                        capture_output=True).returncode == 0 if os.path.exists(SYSTEM_PYTHON) \
        else False
    if not ok:
        pytest.skip("no Python with sqlite3 extension loading")
    todo = []
    for name in TABLES:
        o = load(oracle_dir, name)
        todo.append({"name": name, "root": os.path.join(oracle_dir, name, o["table_root"]),
                     "versions": [s["version"] for s in o["snapshots"]],
                     "row_tracking": o["row_tracking"]})
    r = subprocess.run([SYSTEM_PYTHON, "-c", HOST_SCRIPT, str(ext)], input=json.dumps(todo),
                       capture_output=True, text=True, timeout=900, env=h.sqlite_host_env())
    assert r.returncode == 0, r.stderr[-4000:]
    h.check_process([SYSTEM_PYTHON], r.returncode, r.stderr)
    return json.loads(r.stdout)


@pytest.mark.parametrize("name", TABLES)
def test_delta_files_in_python_sqlite3_equal_spark_at_every_version(oracle_dir, host_answers,
                                                                     name):
    o = load(oracle_dir, name)
    got = host_answers[name]["files"]
    for snap in o["snapshots"]:
        v = snap["version"]
        # the log keys partition values by physical name (column mapping); delta_files by
        # logical name
        logical = {(f.get("metadata") or {}).get("delta.columnMapping.physicalName", f["name"]):
                   f["name"] for f in json.loads(snap["metadata"]["schema_string"])["fields"]}
        mine = {f["path"]: f for f in got[str(v)]}
        spark = {urllib.parse.unquote(f["path"]): f for f in snap["files"]}
        assert sorted(mine) == sorted(spark), f"v{v}: file sets differ"
        for path, sf in spark.items():
            f = mine[path]
            assert f["size"] == sf["size"], f"v{v} {path}"
            want_pv = {logical.get(k, k): x for k, x in sf["partition_values"].items()}
            assert json.loads(f["partition_values"]) == want_pv, f"v{v} {path}"
            assert f["num_records"] == sf["num_records"], f"v{v} {path}"
            card = (sf["deletion_vector"] or {}).get("cardinality", 0)
            assert (f["dv_cardinality"] or 0) == card, f"v{v} {path}"
            assert (json.loads(f["stats"]) if f["stats"] else None) == \
                (json.loads(sf["stats"]) if sf["stats"] else None), f"v{v} {path}"


def _ms(text):
    import calendar
    import datetime as dt
    d = dt.datetime.strptime(text.rstrip("Z"), "%Y-%m-%dT%H:%M:%S.%f")
    return calendar.timegm(d.timetuple()) * 1000 + d.microsecond // 1000


@pytest.mark.parametrize("name", TABLES)
def test_delta_history_in_python_sqlite3_equals_spark(oracle_dir, host_answers, name):
    o = load(oracle_dir, name)
    got = sorted(host_answers[name]["history"], key=lambda r: r["version"])
    assert [r["version"] for r in got] == [x["version"] for x in o["history"]]
    for r, x in zip(got, o["history"]):
        ci = json.loads(r["commit_info"]) if r["commit_info"] else {}
        assert ci.get("operation") == x["operation"], r["version"]
        assert _ms(r["timestamp"]) == x["timestamp_ms"], (r["version"], r["timestamp"])


@pytest.mark.parametrize("name", TABLES)
def test_virtual_table_in_python_sqlite3_reads_spark_rows(oracle_dir, host_answers, name):
    o = load(oracle_dir, name)
    got = host_answers[name]
    assert got["count"] == o["snapshots"][-1]["row_count"]
    err = got["delta_scan_error"]
    assert err and "CREATE VIRTUAL TABLE" in err and "dk sql" in err, err
    if o["row_tracking"]:
        latest = o["snapshots"][-1]
        with open(os.path.join(oracle_dir, name, latest["rows_file"]), encoding="utf-8") as f:
            spark = sorted((r["id"], r["_row_id"], r["_row_commit_version"])
                           for r in map(json.loads, f))
        mine = sorted((r["id"], r["_row_id"], r["_row_commit_version"])
                      for r in got["row_tracking"])
        assert mine == spark


def test_table_valued_functions_in_sqlite3_shell(oracle_dir):
    ext = _ext_path()
    shell = shutil.which("sqlite3")
    if not shell:
        pytest.skip("sqlite3 shell not installed")
    o = load(oracle_dir, "dv")
    root = os.path.join(oracle_dir, "dv", o["table_root"]).replace("'", "''")
    sql = (f"SELECT count(*) FROM delta_files('{root}');\n"
           f"SELECT count(*), max(version) FROM delta_history('{root}');\n"
           f"SELECT sum(dv_cardinality) FROM delta_files('{root}');\n")
    r = subprocess.run([shell, "-cmd", f".load {ext}", ":memory:"], input=sql,
                       capture_output=True, text=True, timeout=120, env=h.sqlite_host_env())
    assert r.returncode == 0, r.stderr
    latest = o["snapshots"][-1]
    card = sum((f["deletion_vector"] or {}).get("cardinality", 0) for f in latest["files"])
    assert r.stdout.split() == [str(latest["num_files"]),
                                f"{len(o['history'])}|{o['latest_version']}", str(card)]
