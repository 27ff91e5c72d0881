"""`dk sql` with OR predicates: SQLite's multi-index OR plan runs one dk scan per OR term and
drops rows whose rowid an earlier term returned, so the connector's rowid must name the row
(file, row index). Answers are compared with DuckDB reading the same table through delta-rs
(the sample table of connectors/sqlite/make_sample.py: 12 files, ids 100..11999 after the
delete), including overlapping OR terms, and the rowid asked for in the middle of a scan.
"""
import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from deltalake import DeltaTable

import dkharness as h

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    dest = tmp_path_factory.mktemp("sqlite_or") / "sales"
    subprocess.run([sys.executable, str(ROOT / "connectors/sqlite/make_sample.py"), str(dest)],
                   check=True, capture_output=True)
    return dest


def dk_rows(sql):
    rc, out, err = h.run_dk("sql", sql, "--format", "jsonl", "--stats")
    assert rc == 0, err[-3000:]
    stats = [json.loads(ln) for ln in err.splitlines() if ln.startswith("{")]
    return [json.loads(ln) for ln in out.splitlines() if ln.strip()], stats[-1]


def duck_rows(table, sql):
    con = duckdb.connect()
    con.register("t", DeltaTable(str(table)).to_pyarrow_dataset())
    cur = con.execute(sql)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


OR_QUERIES = [
    "id < 150 OR id > 11950",                            # disjoint, both by file stats
    "id < 150 OR id < 300 OR id IN (5000, 5001)",        # overlapping terms
    "region = 'eu' OR id < 200",                         # partition term + data term
    "(region = 'us' AND id < 1000) OR (region = 'eu' AND qty = 3 AND id > 11000)",
    "note IS NULL OR id BETWEEN 400 AND 420",
]


@pytest.mark.dk_command("sql")
@pytest.mark.parametrize("where", OR_QUERIES)
def test_or_queries_equal_duckdb(table, where):
    got, stats = dk_rows(f"SELECT id, region, qty FROM delta_scan('{table}') WHERE {where}")
    want = duck_rows(table, f"SELECT id, region, qty FROM t WHERE {where}")
    assert sorted((r["id"], r["region"], r["qty"]) for r in got) == \
        sorted((r["id"], r["region"], r["qty"]) for r in want)
    assert stats["rows_returned"] >= len(want)


@pytest.mark.dk_command("sql")
def test_rowid_names_the_row_even_when_first_asked_mid_scan(table):
    # rowid is first needed at a row far into the scan: the connector restarts the scan with
    # its identity fields and must continue at the same row
    got, _ = dk_rows(f"SELECT id, CASE WHEN id % 1000 = 7 THEN rowid END AS r, rowid AS r2 "
                     f"FROM delta_scan('{table}') WHERE region = 'apac'")
    want = duck_rows(table, "SELECT id FROM t WHERE region = 'apac'")
    assert sorted(r["id"] for r in got) == sorted(r["id"] for r in want)
    assert len({r["r2"] for r in got}) == len(got)
    assert all(r["r"] == r["r2"] for r in got if r["r"] is not None)
    # the same row keeps its rowid in another scan of the same statement
    got2, _ = dk_rows(f"SELECT a.id FROM delta_scan('{table}') a JOIN delta_scan('{table}') b "
                      f"ON a.rowid = b.rowid WHERE a.id < 300 AND b.id < 300")
    assert sorted(r["id"] for r in got2) == list(range(100, 300))
