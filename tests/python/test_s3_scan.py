"""The corpus's read cases answered from the S3 server by every engine: the shared corpus is
uploaded once per session (s3env.s3_corpus, boto3) and each case is read from
s3://<bucket>/corpus/<table> — log, checkpoints, deletion vectors and data files all through
dk's S3 backend — by

  * the Python binding (dk.Table(uri, storage_options).snapshot().scan() -> pyarrow; DuckDB
    and Polars on a sample), every case;
  * the SQLite loadable extension (dk_sqlite.so in Debian's python3, credentials from the
    environment), every full-width case in one process;
  * `dk scan` and `dk sql` (credentials from the environment, and from --storage-option /
    per-table aws_*= arguments on a few), a sample of the cases — all with DK_S3_FULL=1.

The oracle is the same as for the local reads: the expected rows of each case (written by
Delta-Spark / the golden-table generators, manifest.json). The error cases must fail on S3 as
they fail locally."""

from __future__ import annotations

import base64
import json
import os
import subprocess

import pytest

import dkharness as h
import variant_decode
from test_py_support import import_dk, read_cases

dk = import_dk()
FULL = os.environ.get("DK_S3_FULL") == "1"
READ = read_cases()
# the sample of the subprocess engines: every third case (all with DK_S3_FULL=1)
SAMPLE = READ if FULL else READ[::3]
# SQLite checks a case's rows in Python row by row: its one 100k-row case (read above by
# pyarrow and dk scan) only with DK_S3_FULL=1
SQLITE_CASES = [c for c in READ if FULL or (c.get("row_count") or 0) <= 10000]


def _env(srv, with_keys=True):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["HOME"] = "/nonexistent"  # no ~/.aws files
    if with_keys:
        env.update(srv.env)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1")
    return env


def _run(argv, env, timeout=180):
    r = subprocess.run([str(a) for a in argv], capture_output=True, text=True, env=env,
                       timeout=timeout)
    h.check_process(argv, r.returncode, r.stderr)
    return r


def _schema(case):
    schema = h.case_schema(case)
    if case.get("columns", "all") != "all":
        fields = dict(schema[1])
        schema = ("struct", tuple((c, fields[c]) for c in case["columns"]))
    return schema


def _so(srv):
    return {"aws_access_key_id": srv.access_key, "aws_secret_access_key": srv.secret_key,
            "aws_endpoint_url": srv.endpoint, "aws_region": "us-east-1",
            "aws_allow_http": "true", "dk_s3_skip_env": "true"}


# ---- Python binding --------------------------------------------------------------------------

def _py_scan(srv, root, case):
    t = dk.Table(f"{root}/{case['table']}", storage_options=_so(srv))
    snap = t.snapshot(version=case["version"]) if case["version"] is not None else t.snapshot()
    kw = {}
    if case.get("columns", "all") != "all":
        kw["columns"] = list(case["columns"])
    if case.get("filter"):
        kw["filter"] = case["filter"]
    return snap.scan(**kw)


@pytest.mark.parametrize("case", READ, ids=[c["id"] for c in READ])
def test_python_scan_over_s3(s3_server, s3_corpus, case):
    pa = pytest.importorskip("pyarrow")
    table = pa.table(_py_scan(s3_server, s3_corpus, case))
    schema = _schema(case)
    expected = h.expected_rows(case)
    if case.get("columns", "all") != "all":
        expected = h.canon_manifest_rows(expected, schema)
    got = h.canon_arrow(table, schema)
    if "variant" in json.dumps(h.case_schema(case)):
        got = [variant_decode.decode_tree(r, schema) for r in got]
    h.assert_rows_equal(got, expected, ordered=case.get("ordered", False))


def test_duckdb_and_polars_consume_an_s3_scan(s3_server, s3_corpus):
    duckdb = pytest.importorskip("duckdb")
    pl = pytest.importorskip("polars")
    case = h.case_by_id("delta-golden/basic-decimal-table@latest")
    s = _py_scan(s3_server, s3_corpus, case)  # noqa: F841 - DuckDB finds `s` by name
    n = len(h.expected_rows(case))
    assert duckdb.connect().sql("SELECT count(*) FROM s").fetchall() == [(n,)]
    assert pl.DataFrame(_py_scan(s3_server, s3_corpus, case)).height == n


# ---- dk scan -----------------------------------------------------------------------------------

def _scan_args(root, case):
    args = ["scan", f"{root}/{case['table']}", "--format", "jsonl"]
    if case.get("version") is not None:
        args += ["--version", str(case["version"])]
    if case.get("columns", "all") != "all":
        args += ["--columns", ",".join(case["columns"])]
    return args


@pytest.mark.parametrize("case", SAMPLE, ids=[c["id"] for c in SAMPLE])
def test_dk_scan_over_s3(s3_server, s3_corpus, case):
    r = _run([h.dk_binary(), *_scan_args(s3_corpus, case), "--threads", "2"], _env(s3_server))
    assert r.returncode == 0, r.stderr[-4000:]
    h.assert_rows_equal(h.canon_dk_jsonl(r.stdout, _schema(case)), h.expected_rows(case))


def test_dk_scan_storage_option_flags(s3_server, s3_corpus):
    case = h.case_by_id("delta-golden/dv-partitioned-with-checkpoint@latest")
    flags = [x for k, v in _so(s3_server).items() for x in ("--storage-option", f"{k}={v}")]
    r = _run([h.dk_binary(), *_scan_args(s3_corpus, case), *flags], _env(s3_server, False))
    assert r.returncode == 0, r.stderr[-4000:]
    h.assert_rows_equal(h.canon_dk_jsonl(r.stdout, _schema(case)), h.expected_rows(case))


ERRORS = h.cases("error")


@pytest.mark.parametrize("case", ERRORS, ids=[c["id"] for c in ERRORS])
def test_error_cases_fail_on_s3_as_locally(s3_server, s3_corpus, case):
    env = _env(s3_server)
    local = _run([h.dk_binary(), "scan", h.table_path(case)], env)
    remote = _run([h.dk_binary(), "scan", f"{s3_corpus}/{case['table']}"], env)
    assert local.returncode != 0 and remote.returncode == local.returncode, remote.stderr
    assert remote.stdout == ""
    # the same kind of error ("dk: corrupt: ...", "dk: unsupported: ...")
    assert remote.stderr.split(":")[:2] == local.stderr.split(":")[:2], (local.stderr, remote.stderr)


# ---- SQLite: dk sql and the loadable extension ------------------------------------------------

NESTED = ("array", "struct", "map", "variant")


def _sqlite_rows(rows, schema, blobs_hex=False):
    """SQLite rows -> dk's JSONL encoding (as test_sqlite_manifest.from_sqlite)."""
    fields = dict(schema[1])
    out = []
    for r in rows:
        o = {}
        for k, v in r.items():
            t = fields[k]
            if v is not None and blobs_hex and t == ("prim", "binary"):
                v = base64.b64encode(bytes.fromhex(v)).decode()
            elif v is not None and t[0] in NESTED and isinstance(v, str):
                v = json.loads(v)
            elif v is not None and t == ("prim", "boolean") and isinstance(v, int):
                v = bool(v)
            o[k] = v
        out.append(o)
    return h.canon_dk_jsonl(out, schema)


def _quote(s):
    return "'" + str(s).replace("'", "''") + "'"


def _sql_query(root, case):
    args = _quote(f"{root}/{case['table']}")
    if case.get("version") is not None:
        args += f", {int(case['version'])}"
    cols = "*"
    if case.get("columns", "all") != "all":
        cols = ", ".join('"' + c.replace('"', '""') + '"' for c in case["columns"])
    return f"SELECT {cols} FROM delta_scan({args})"


SQL_SAMPLE = [c for c in SAMPLE if c in SQLITE_CASES]


@pytest.mark.parametrize("case", SQL_SAMPLE, ids=[c["id"] for c in SQL_SAMPLE])
def test_dk_sql_over_s3(s3_server, s3_corpus, case):
    r = _run([h.dk_binary(), "sql", _sql_query(s3_corpus, case), "--format", "jsonl"],
             _env(s3_server))
    assert r.returncode == 0, r.stderr[-4000:]
    h.assert_rows_equal(_sqlite_rows(h.parse_jsonl(r.stdout), _schema(case)),
                        h.expected_rows(case))


def test_dk_sql_storage_options_and_meta_functions(s3_server, s3_corpus):
    case = h.case_by_id("delta-golden/basic-decimal-table@latest")
    uri = _quote(f"{s3_corpus}/{case['table']}")
    flags = [x for k, v in _so(s3_server).items() for x in ("--storage-option", f"{k}={v}")]
    env = _env(s3_server, False)
    sql = (f"SELECT count(*) AS n FROM delta_scan({uri}); "
           f"SELECT count(*) AS n FROM delta_files({uri}); "
           f"SELECT max(version) AS n FROM delta_history({uri})")
    r = _run([h.dk_binary(), "sql", sql, "--format", "jsonl", *flags], env)
    assert r.returncode == 0, r.stderr
    local = _run([h.dk_binary(), "sql", sql.replace(uri, _quote(h.table_path(case))),
                  "--format", "jsonl"], env)
    assert r.stdout == local.stdout and h.parse_jsonl(r.stdout)[0] == {"n": len(h.expected_rows(case))}
    # the same options as arguments of one table, nothing in the environment
    opts = ", ".join(f"{k}={_quote(v)}" for k, v in _so(s3_server).items())
    r = _run([h.dk_binary(), "sql", f"CREATE VIRTUAL TABLE t USING delta({uri}, {opts}); "
              "SELECT count(*) AS n FROM t", "--format", "jsonl"], env)
    assert r.returncode == 0, r.stderr
    assert h.parse_jsonl(r.stdout) == [{"n": len(h.expected_rows(case))}]
    # no credentials, no endpoint: a clear error naming the table, no hang
    r = _run([h.dk_binary(), "sql", f"SELECT count(*) FROM delta_scan({uri})",
              "--storage-option", f"aws_endpoint_url={s3_server.endpoint}",
              "--storage-option", "aws_allow_http=true", "--storage-option", "max_retries=0"], env)
    assert r.returncode != 0 and "HTTP 403" in r.stderr and s3_corpus in r.stderr, r.stderr
    # storage options on a local path are refused
    r = _run([h.dk_binary(), "sql", f"CREATE VIRTUAL TABLE t USING delta("
              f"{_quote(h.table_path(case))}, aws_region='x')"], env)
    assert r.returncode != 0 and "object-store tables" in r.stderr, r.stderr


SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's build has enable_load_extension (the venv's lacks it)

EXT_SCRIPT = r"""
import json, sqlite3, sys
ext, cases = sys.argv[1], json.load(sys.stdin)
con = sqlite3.connect(":memory:")
con.enable_load_extension(True)
con.load_extension(ext)
res = {}
for i, (cid, path, version, extra) in enumerate(cases):
    opt = ("" if version is None else f", version={int(version)}") + extra
    q = "'" + path.replace("'", "''") + "'"
    try:
        con.execute(f'CREATE VIRTUAL TABLE "t{i}" USING delta({q}{opt})')
        cur = con.execute(f'SELECT * FROM "t{i}"')
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, [v.hex() if isinstance(v, bytes) else v for v in r]))
                for r in cur.fetchall()]
        res[cid] = {"rows": rows}
    except sqlite3.Error as e:
        res[cid] = {"error": str(e)}
json.dump(res, sys.stdout)
"""


def test_sqlite_extension_reads_every_case_over_s3(s3_server, s3_corpus):
    import test_sqlite_manifest as sqlm
    ext = sqlm._ext_path()
    if not sqlm._have_system_python():
        pytest.skip("no Python with sqlite3 extension loading")
    full = [c for c in SQLITE_CASES if c.get("columns", "all") == "all"]
    todo = [(c["id"], f"{s3_corpus}/{c['table']}", c.get("version"), "") for c in full]
    # one table with its storage options as arguments (the environment has none)
    opts = "".join(f", {k}={_quote(v)}" for k, v in _so(s3_server).items())
    todo.append(("args", f"{s3_corpus}/{full[0]['table']}", full[0].get("version"), opts))
    env = sqlm._ext_env()
    env.update(_env(s3_server))
    r = subprocess.run([SYSTEM_PYTHON, "-c", EXT_SCRIPT, str(ext)], input=json.dumps(todo),
                       capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(r.stdout)
    for c in full:
        got = res[c["id"]]
        assert "error" not in got, (c["id"], got)
        h.assert_rows_equal(_sqlite_rows(got["rows"], _schema(c), blobs_hex=True),
                            h.expected_rows(c))
    assert res["args"] == res[full[0]["id"]]
    assert len(full) >= 90
