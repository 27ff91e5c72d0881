"""`dk scan --where`, `--limit`, `--columns` and `dk files --where` on real Delta tables.

Oracle: the expected rows of the shared corpus (written by Delta-Spark / the golden-table
generators), filtered here by a Python predicate equivalent to the SQL one (Spark's WHERE
rule: rows where the predicate is NULL are dropped). dk must return exactly those rows,
whatever it prunes by partition values, skips by statistics or filters as a residual.
Pushdown bookkeeping is checked against exact properties (e.g. a partition-only predicate
leaves no residual and filters no row after pruning).
"""

import json
from decimal import Decimal

import pytest

import dkharness as h


def _nn(*vs):
    return all(v is not None for v in vs)


# (case id, SQL predicate, Python predicate over an expected row in manifest encoding)
FILTER_CASES = [
    ("delta-golden/dv-with-columnmapping@latest", "part = 1", lambda r: r["part"] == 1),
    ("delta-golden/dv-with-columnmapping@latest", "part >= 3 AND col1 > 20",
     lambda r: _nn(r["part"], r["col1"]) and r["part"] >= 3 and r["col1"] > 20),
    ("delta-golden/dv-with-columnmapping@latest", "col2 = 'foo2'", lambda r: r["col2"] == "foo2"),
    ("delta-golden/dv-with-columnmapping@latest", "part = 1 OR col1 < 5",
     lambda r: r["part"] == 1 or (r["col1"] is not None and r["col1"] < 5)),
    ("delta-golden/dv-with-columnmapping@latest", "col1 IN (1, 2, 31, 48)",
     lambda r: r["col1"] in (1, 2, 31, 48)),
    ("delta-golden/dv-with-columnmapping@latest", "NOT (part < 8)",
     lambda r: r["part"] is not None and not r["part"] < 8),
    ("delta-golden/dv-partitioned-with-checkpoint@latest", "part = 2 AND col1 >= 12",
     lambda r: r["part"] == 2 and r["col1"] is not None and r["col1"] >= 12),
    ("delta-golden/basic-decimal-table@latest", "part > 0",
     lambda r: r["part"] is not None and Decimal(r["part"]) > 0),
    ("delta-golden/basic-decimal-table@latest", "col1 < 1",
     lambda r: r["col1"] is not None and Decimal(r["col1"]) < 1),
    ("delta-golden/data-reader-partition-values@latest", "as_int IS NULL",
     lambda r: r["as_int"] is None),
    ("delta-golden/data-reader-partition-values@latest", "as_string = '1' OR as_boolean",
     lambda r: r["as_string"] == "1" or r["as_boolean"] is True),
    ("delta-golden/data-reader-partition-values@latest", "as_date = DATE '2021-09-08'",
     lambda r: r["as_date"] == "2021-09-08"),
    ("delta-golden/hive/deltatbl-partition-prune@latest", "city = 'hz' AND cnt > 1",
     lambda r: r["city"] == "hz" and r["cnt"] is not None and r["cnt"] > 1),
    ("delta-golden/kernel-timestamp-PST@latest",
     "part >= TIMESTAMP '2020-01-01 08:09:10.001Z'",
     lambda r: r["part"] is not None and r["part"] >= 1577866150001000),
    ("delta-golden/data-reader-timestamp_ntz@latest",
     "tsNtz < TIMESTAMP_NTZ '2021-01-01 00:00:00'",
     lambda r: r["tsNtz"] is not None and r["tsNtz"] < 1609459200000000),
    ("delta-golden/data-reader-timestamp_ntz-id-mode@latest", "tsNtzPartition IS NOT NULL AND id > 3",
     lambda r: r["tsNtzPartition"] is not None and r["id"] is not None and r["id"] > 3),
]


def _scan(case, *extra):
    args = ["scan", h.table_path(case), "--format", "jsonl", *extra]
    if case.get("version") is not None:
        args += ["--version", str(case["version"])]
    return h.run_dk(*args)


@pytest.mark.dk_command("scan")
@pytest.mark.parametrize("cid,where,pred", FILTER_CASES,
                         ids=[f"{c[0]}:{c[1]}" for c in FILTER_CASES])
def test_scan_where_matches_filtered_expected_rows(cid, where, pred):
    case = h.case_by_id(cid)
    expected = [r for r in h.expected_rows(case) if pred(r)]
    rc, out, err = _scan(case, "--where", where, "--stats")
    assert rc == 0, err[-3000:]
    h.assert_rows_equal(h.canon_dk_jsonl(out, h.case_schema(case)), expected)
    stats = json.loads(err.strip().splitlines()[-1])
    assert stats["rows_returned"] == len(expected)
    assert stats["files_selected"] + stats["files_pruned_partition"] + stats["files_pruned_stats"] \
        == stats["files_total"]
    assert stats["rows_decoded"] - stats["rows_deleted"] - stats["rows_filtered"] == len(expected)


@pytest.mark.dk_command("scan")
def test_partition_only_filter_is_exact_without_residual():
    case = h.case_by_id("delta-golden/dv-with-columnmapping@latest")
    rc, out, err = h.run_dk("files", h.table_path(case), "--where", "part = 1", "--json")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["residual"] is None
    assert {s["reason"] for s in doc["skipped"]} == {"partition"}
    rc, out, err = _scan(case, "--where", "part = 1", "--stats")
    stats = json.loads(err.strip().splitlines()[-1])
    assert stats["rows_filtered"] == 0 and stats["files_pruned_partition"] > 0


@pytest.mark.dk_command("scan")
def test_files_where_reports_stats_skipping():
    case = h.case_by_id("delta-golden/dv-with-columnmapping@latest")
    rc, out, err = h.run_dk("files", h.table_path(case), "--where", "col1 > 1000", "--json")
    assert rc == 0, err
    doc = json.loads(out)
    # no expected row has col1 > 1000, and every file has stats: all files skipped by stats
    assert not [r for r in h.expected_rows(case) if r["col1"] is not None and r["col1"] > 1000]
    assert doc["files"] == [] and doc["skipped"]
    assert {s["reason"] for s in doc["skipped"]} == {"stats"}
    assert doc["residual"] is not None


@pytest.mark.dk_command("scan")
@pytest.mark.parametrize("limit", [0, 1, 7, 34, 35, 100])
def test_limit_returns_a_sub_multiset(limit):
    case = h.case_by_id("delta-golden/dv-with-columnmapping@latest")
    rc, out, err = _scan(case, "--limit", str(limit), "--stats")
    assert rc == 0, err
    rows = h.canon_dk_jsonl(out, h.case_schema(case))
    exp = h.expected_rows(case)
    assert len(rows) == min(limit, len(exp))
    pool = [h.canonical_text(r) for r in exp]
    for r in rows:
        pool.remove(h.canonical_text(r))  # raises if r is not an expected row


@pytest.mark.dk_command("scan")
def test_columns_projection_and_order():
    case = h.case_by_id("delta-golden/data-reader-partition-values@latest")
    rc, out, err = _scan(case, "--columns", "value,as_int,as_nested_struct")
    assert rc == 0, err
    lines = out.strip().splitlines()
    assert [list(json.loads(l)) for l in lines] == [["value", "as_int", "as_nested_struct"]] * 3
    full = {r["value"]: r for r in h.expected_rows(case)}
    for l in lines:
        r = json.loads(l)
        assert r["as_int"] == full[r["value"]]["as_int"]
        assert r["as_nested_struct"] == full[r["value"]]["as_nested_struct"]


@pytest.mark.dk_command("scan")
def test_default_column_order_is_data_then_partition():
    case = h.case_by_id("delta-golden/dv-with-columnmapping@latest")
    rc, out, err = _scan(case, "--limit", "1")
    assert list(json.loads(out.splitlines()[0])) == ["col1", "col2", "part"]


@pytest.mark.dk_command("scan")
def test_unknown_column_and_bad_filter_fail_cleanly():
    case = h.case_by_id("delta-golden/dv-with-columnmapping@latest")
    rc, out, err = _scan(case, "--columns", "nope")
    assert rc != 0 and "not found" in err
    rc, out, err = _scan(case, "--where", "nope = 1")
    assert rc != 0 and "not found" in err
    rc, out, err = _scan(case, "--where", "col2 > ")
    assert rc != 0 and out == ""
