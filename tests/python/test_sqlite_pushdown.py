"""`dk sql` over a delta-rs-written table: answers equal DuckDB's over the same Parquet files,
and pushdown is verified by the `--stats` counters (issue #5's second proof).

The Spark interop harness is not in main yet, so the oracle is DuckDB 2.0.1 reading the table
through delta-rs (`deltalake.DeltaTable(...).to_pyarrow_dataset()`); `_metadata`-style hidden
columns are checked against delta-rs's add actions and pyarrow's read of each data file.
The table (connectors/sqlite/make_sample.py): 12 files (3 regions x 4 appends, each file one id
range in row groups of 250 rows), version 4 deletes ids < 100.
"""

import datetime
import json
import shutil
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

import dkharness as h

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    dest = tmp_path_factory.mktemp("sqlite") / "sales"
    subprocess.run([sys.executable, str(ROOT / "connectors/sqlite/make_sample.py"), str(dest)],
                   check=True, capture_output=True)
    return dest


def dk_sql(sql, *extra, ok=True):
    rc, out, err = h.run_dk("sql", sql, "--format", "jsonl", "--stats", *extra)
    if ok:
        assert rc == 0, err[-3000:]
    stats = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    return rc, h.parse_jsonl(out), stats, err


def duck(table, sql, version=None):
    ds = DeltaTable(str(table), version=version).to_pyarrow_dataset()
    con = duckdb.connect()
    con.register("t", ds)
    cur = con.execute(sql)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def norm(rows):
    def v(x):
        if isinstance(x, float):
            return round(x, 6)
        if isinstance(x, bool):
            return int(x)
        return x
    return sorted(tuple(v(x) for x in r.values()) for r in rows)


def add_actions(table):
    return pa.table(DeltaTable(str(table)).get_add_actions(flatten=True)).to_pylist()


def files_where(table, pred):
    adds = add_actions(table)
    return sum(1 for a in adds if pred(a))


# (SQLite query with {t}, DuckDB query over t, check of the stats given (stats, table))
Q = [
    ("SELECT region, count(*) AS n, sum(qty) AS q, min(id) AS lo, max(id) AS hi FROM {t} "
     "GROUP BY region",
     "SELECT region, count(*), sum(qty), min(id), max(id) FROM t GROUP BY region",
     lambda s, tb: s["files_pruned_partition"] == 0 and s["files_pruned_stats"] == 0
     and s["files_selected"] == s["files_total"] == 12),
    ("SELECT count(*) FROM {t} WHERE region = 'eu'",
     "SELECT count(*) FROM t WHERE region = 'eu'",
     lambda s, tb: s["files_pruned_partition"] == files_where(
         tb, lambda a: a["partition.region"] != "eu") and s["rows_filtered"] == 0),
    ("SELECT id, qty FROM {t} WHERE id BETWEEN 5000 AND 5003",
     "SELECT id, qty FROM t WHERE id BETWEEN 5000 AND 5003",
     lambda s, tb: s["files_pruned_stats"] >= 9 and s["row_groups_skipped"] > 0
     and s["rows_decoded"] <= 3 * 250),
    ("SELECT count(*) FROM {t} WHERE id IN (5, 150, 7000, 11000)",
     "SELECT count(*) FROM t WHERE id IN (5, 150, 7000, 11000)",
     lambda s, tb: s["files_pruned_stats"] >= 3 and s["row_groups_skipped"] > 0),
    ("SELECT id FROM {t} WHERE region IN ('apac', 'us') AND qty > 8",
     "SELECT id FROM t WHERE region IN ('apac', 'us') AND qty > 8",
     lambda s, tb: s["files_pruned_partition"] == files_where(
         tb, lambda a: a["partition.region"] == "eu")),
    ("SELECT count(*), sum(price) FROM {t} WHERE note LIKE 'n1%'",
     "SELECT count(*), sum(price) FROM t WHERE note ILIKE 'n1%'",
     lambda s, tb: s["rows_filtered"] > 0),
    ("SELECT count(*) FROM {t} WHERE note GLOB 'n1*'",
     "SELECT count(*) FROM t WHERE note LIKE 'n1%'",
     lambda s, tb: s["rows_filtered"] > 0),
    ("SELECT count(*) FROM {t} WHERE day = '2024-01-03'",
     "SELECT count(*) FROM t WHERE day = DATE '2024-01-03'",
     lambda s, tb: s["files_pruned_stats"] >= 9),
    ("SELECT count(*) FROM {t} WHERE region = 'eu' AND ts >= '2024-01-04T00:00:00.000000Z'",
     "SELECT count(*) FROM t WHERE region = 'eu' AND ts >= TIMESTAMPTZ '2024-01-04 00:00:00Z'",
     lambda s, tb: s["files_pruned_partition"] == 8 and s["files_pruned_stats"] >= 1),
    ("SELECT count(*) FROM {t} WHERE ts > '2024-01-04' AND ts <= '2024-01-05'",
     "SELECT count(*) FROM t WHERE ts >= TIMESTAMPTZ '2024-01-04 00:00:00Z' "
     "AND ts < TIMESTAMPTZ '2024-01-05 00:00:00Z'",
     lambda s, tb: s["files_pruned_stats"] >= 6),
    ("SELECT count(*) FROM {t} WHERE ts = '2024-01-04' OR ts IS NULL",
     "SELECT 0", lambda s, tb: s["files_pruned_stats"] == 0),
    ("SELECT count(*) FROM {t} WHERE note IS NULL",
     "SELECT count(*) FROM t WHERE note IS NULL", lambda s, tb: s["rows_filtered"] > 0),
    ("SELECT count(*) FROM {t} WHERE paid = 1 AND note IS NOT NULL",
     "SELECT count(*) FROM t WHERE paid AND note IS NOT NULL", lambda s, tb: s["rows_filtered"] > 0),
    ("SELECT id FROM {t} WHERE amount = '0.05'",
     "SELECT id FROM t WHERE amount = 0.05", lambda s, tb: s["rows_filtered"] > 0),
    ("SELECT count(*) FROM {t} WHERE price > 20 AND price <= 25.5",
     "SELECT count(*) FROM t WHERE price > 20 AND price <= 25.5",
     lambda s, tb: s["rows_filtered"] > 0),
    ("SELECT count(*) FROM {t} WHERE id != 500 AND qty IS 3",
     "SELECT count(*) FROM t WHERE id <> 500 AND qty IS NOT DISTINCT FROM 3",
     lambda s, tb: s["rows_filtered"] > 0),
    # a value of another type is not pushed; SQLite's affinity rules still answer it
    ("SELECT count(*) FROM {t} WHERE id > '11000'",
     "SELECT count(*) FROM t WHERE id > 11000",
     lambda s, tb: s["files_pruned_stats"] == 0 and s["rows_filtered"] == 0),
    ("SELECT a.region, count(*) FROM {t} a JOIN {t} b ON a.id = b.id + 1 "
     "WHERE b.id BETWEEN 200 AND 230 GROUP BY a.region",
     "SELECT a.region, count(*) FROM t a JOIN t b ON a.id = b.id + 1 "
     "WHERE b.id BETWEEN 200 AND 230 GROUP BY a.region",
     lambda s, tb: s["scans"] >= 2 and s["files_pruned_stats"] > 0),
]


@pytest.mark.dk_command("sql")
@pytest.mark.parametrize("i", range(len(Q)), ids=[q[0][:60] for q in Q])
def test_sql_answers_equal_duckdb_and_pushdown_shows_in_stats(table, i):
    q, dq, check = Q[i]
    _, rows, stats, err = dk_sql(q.format(t=f"delta_scan('{table}')"))
    assert norm(rows) == norm(duck(table, dq)), q
    assert len(stats) == 1, err
    assert check(stats[0], table), (q, stats[0])


@pytest.mark.dk_command("sql")
def test_limit_and_offset_are_pushed(table):
    _, rows, stats, _ = dk_sql(f"SELECT id FROM delta_scan('{table}') LIMIT 10")
    assert len(rows) == 10
    s = stats[0]
    assert s["files_pruned_limit"] >= 11 and s["files_selected"] == 1 and s["rows_decoded"] <= 250
    _, rows, stats, _ = dk_sql(
        f"SELECT id FROM delta_scan('{table}') WHERE region = 'eu' LIMIT 10 OFFSET 5")
    assert len(rows) == 10 and stats[0]["files_pruned_limit"] >= 3
    ids = {r["id"] for r in duck(table, "SELECT id FROM t WHERE region = 'eu'")}
    assert {r["id"] for r in rows} <= ids
    # an inexact constraint (LIKE) keeps LIMIT in SQLite: the answer stays right
    _, rows, stats, _ = dk_sql(
        f"SELECT id FROM delta_scan('{table}') WHERE note LIKE 'N12%' LIMIT 7")
    assert len(rows) == 7 and stats[0]["files_pruned_limit"] == 0
    # with ORDER BY the scan cannot stop early (SQLite offers LIMIT there too)
    q = "SELECT id FROM {t} WHERE region = 'eu' ORDER BY id DESC LIMIT 2 OFFSET 1"
    _, rows, stats, _ = dk_sql(q.format(t=f"delta_scan('{table}')"))
    assert [r["id"] for r in rows] == [r["id"] for r in duck(table, q.format(t="t"))]
    assert stats[0]["files_pruned_limit"] == 0


@pytest.mark.dk_command("sql")
def test_projection_follows_col_used(table):
    # reading one column decodes the same rows; SQLite sees only what it asked for
    _, rows, stats, _ = dk_sql(f"SELECT sum(qty) AS q FROM delta_scan('{table}')")
    assert rows == [{"q": duck(table, "SELECT sum(qty) AS q FROM t")[0]["q"]}]
    _, rows, stats, _ = dk_sql(f"SELECT count(*) AS n FROM delta_scan('{table}')")
    assert rows == duck(table, "SELECT count(*) AS n FROM t")


@pytest.mark.dk_command("sql")
def test_time_travel(table):
    for v in (0, 3, 4):
        _, rows, _, _ = dk_sql(f"SELECT count(*) AS n, min(id) AS lo FROM delta_scan('{table}', {v})")
        assert norm(rows) == norm(duck(table, "SELECT count(*), min(id) FROM t", version=v))
    _, rows, _, _ = dk_sql(
        f"CREATE VIRTUAL TABLE old USING delta('{table}', version=1); "
        "SELECT count(*) AS n FROM old")
    assert rows == [{"n": 6000}]


@pytest.mark.dk_command("sql")
def test_hidden_file_columns_match_delta_rs_and_pyarrow(table):
    adds = {a["path"]: a for a in add_actions(table)}
    _, rows, _, _ = dk_sql(
        f"SELECT id, _file_path, _file_name, _file_size, _row_index, _file_modification_time "
        f"FROM delta_scan('{table}') WHERE region = 'us' AND id % 97 = 0")
    assert rows
    cache = {}
    for r in rows:
        rel = os.path.relpath(r["_file_path"].removeprefix("file://"), table)
        a = adds[rel]
        assert r["_file_name"] == os.path.basename(rel)
        assert r["_file_size"] == a["size_bytes"]
        if rel not in cache:
            cache[rel] = pq.read_table(table / rel, columns=["id"]).column("id").to_pylist()
        assert cache[rel][r["_row_index"]] == r["id"]
        mt = a["modification_time"]  # ms since the epoch (delta-rs)
        want = (datetime.datetime.fromtimestamp(mt // 1000, datetime.timezone.utc)
                + datetime.timedelta(milliseconds=mt % 1000))
        assert r["_file_modification_time"] == want.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@pytest.mark.dk_command("sql")
def test_delta_files_and_history(table):
    _, rows, _, _ = dk_sql(
        f"SELECT path, partition_values, size, num_records, dv_cardinality "
        f"FROM delta_files('{table}')")
    adds = {a["path"]: a for a in add_actions(table)}
    assert {r["path"] for r in rows} == set(adds)
    for r in rows:
        a = adds[r["path"]]
        assert json.loads(r["partition_values"]) == {"region": a["partition.region"]}
        assert r["size"] == a["size_bytes"] and r["num_records"] == a["num_records"]
        assert r["dv_cardinality"] == 0
    _, rows, _, _ = dk_sql(f"SELECT count(*) AS n FROM delta_files('{table}', 0)")
    assert rows == [{"n": len(DeltaTable(str(table), version=0).file_uris())}]
    _, rows, _, _ = dk_sql(
        f"SELECT version, json_extract(commit_info, '$.operation') AS op "
        f"FROM delta_history('{table}') ORDER BY version")
    hist = sorted(DeltaTable(str(table)).history(), key=lambda c: c["version"])
    assert [(r["version"], r["op"]) for r in rows] == [(c["version"], c["operation"]) for c in hist]


BAD = [
    ("SELECT * FROM delta_scan('/nonexistent/table')", "does not exist"),
    ("SELECT * FROM delta_scan('/tmp')", "not a Delta table"),
    ("SELECT * FROM delta_scan('{t}', 99)", "not found"),
    ("CREATE VIRTUAL TABLE x USING delta('{t}', bogus=1)", "bad option 'bogus=1'"),
    ("CREATE VIRTUAL TABLE x USING delta('{t}', version=-3)", "bad option"),
    ("CREATE VIRTUAL TABLE x USING delta('{t}', timestamp='yesterday')", "bad option"),
    ("CREATE VIRTUAL TABLE x USING delta()", "usage"),
    ("SELECT * FROM delta_files('/nonexistent')", "delta_files: '/nonexistent'"),
    ("SELECT * FROM delta_history(42)", "first argument must be the table path"),
    ("SELECT * FROM delta_scan", "delta_scan('path') works in `dk sql`"),
]


@pytest.mark.dk_command("sql")
@pytest.mark.parametrize("sql,msg", BAD, ids=[b[0][:50] for b in BAD])
def test_bad_input_is_an_sqlite_error(table, sql, msg):
    rc, out, err = h.run_dk("sql", sql.format(t=table))
    assert rc == 1 and out == "", (rc, out)
    assert err.startswith("dk sql: ") and msg in err, err


@pytest.mark.dk_command("sql")
def test_unsupported_feature_is_an_sqlite_error(tmp_path):
    # a copy of a real table whose protocol asks for a reader feature nobody implements
    case = h.case_by_id("delta-golden/basic-with-vacuum-protocol-check-feature@latest")
    t = tmp_path / "t"
    shutil.copytree(h.table_path(case), t)
    log = t / "_delta_log"
    for commit in sorted(log.glob("*.json")):
        lines = commit.read_text().splitlines()
        for i, line in enumerate(lines):
            a = json.loads(line)
            if "protocol" in a:
                a["protocol"].setdefault("readerFeatures", []).append("futureFeatureX")
                a["protocol"]["minReaderVersion"] = 3
                a["protocol"]["minWriterVersion"] = 7
                a["protocol"].setdefault("writerFeatures", []).append("futureFeatureX")
                lines[i] = json.dumps(a)
        commit.write_text("\n".join(lines) + "\n")
    rc, out, err = h.run_dk("sql", f"SELECT count(*) FROM delta_scan('{t}')")
    assert rc == 1 and "unsupported" in err and "futureFeatureX" in err, err
    assert err.startswith("dk sql: delta"), err


@pytest.mark.dk_command("sql")
def test_estimates_make_the_filtered_scan_the_outer_loop(table):
    # whatever the FROM order, the side whose literal constraints select few files is scanned
    # first and the other is probed with the join key (pushed as a constraint per outer row)
    for a, b in (("a", "b"), ("b", "a")):
        q = (f"EXPLAIN QUERY PLAN SELECT count(*) FROM delta_scan('{table}') {a} "
             f"JOIN delta_scan('{table}') {b} ON a.id = b.id WHERE b.id BETWEEN 200 AND 230")
        _, rows, _, _ = dk_sql(q)
        details = [r["detail"] for r in rows]
        assert details[0].startswith("SCAN b VIRTUAL TABLE"), details
        assert details[1].startswith("SCAN a VIRTUAL TABLE"), details


@pytest.mark.dk_command("sql")
def test_time_travel_by_timestamp(table):
    # without in-commit timestamps a version's commit time is its commit file's mtime
    # (PROTOCOL.md; delta-spark does the same), not commitInfo.timestamp, which is taken
    # before the file is written
    ts_ms = int(os.stat(table / "_delta_log" / f"{1:020d}.json").st_mtime * 1000)
    _, rows, _, _ = dk_sql(
        f"CREATE VIRTUAL TABLE v USING delta('{table}', timestamp={ts_ms}); "
        "SELECT count(*) AS n FROM v")
    dt = DeltaTable(str(table))
    dt.load_as_version(1)
    assert rows == [{"n": dt.to_pyarrow_dataset().count_rows()}]
    rc, _, _, err = dk_sql(
        f"CREATE VIRTUAL TABLE w USING delta('{table}', timestamp='1999-01-01 00:00:00')",
        ok=False)
    assert rc == 1 and "dk sql: delta" in err


@pytest.mark.dk_command("sql")
def test_row_tracking_columns_are_null_without_the_feature(table):
    _, rows, _, _ = dk_sql(
        f"SELECT count(*) AS n FROM delta_scan('{table}') "
        "WHERE _row_id IS NULL AND _row_commit_version IS NULL")
    assert rows == duck(table, "SELECT count(*) AS n FROM t")


@pytest.mark.dk_command("sql")
def test_corrupt_data_file_is_an_sqlite_error(tmp_path):
    root = h.copy_table("delta-golden/basic-decimal-table@latest", tmp_path / "t")
    victim = sorted(root.glob("**/*.parquet"))[0]
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) // 2] + b"\0" * 64 + data[-8:])  # keeps PAR1 magic
    rc, out, err = h.run_dk("sql", f"SELECT * FROM delta_scan('{root}')", "--format", "jsonl")
    assert rc == 1, (rc, out)
    assert err.startswith("dk sql: delta") and "corrupt" in err, err
