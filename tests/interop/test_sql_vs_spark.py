"""`dk sql` against Spark SQL (issue #5): every query of sql_oracle.Q runs in `dk sql` (its
SQLite text) and must return Spark SQL's answer (sql_oracle.json, written by Spark over the same
table); `--stats` must show the pruning the predicate allows; `_file_name`/`_file_size`,
`_row_id` and `_row_commit_version` must equal Spark's `_metadata.file_name`/`file_size`,
`row_id`, `row_commit_version`.

Normalization (dk sql values are SQLite values, see the README's "The `dk` command"):
* integers, strings, dates compare exactly; booleans are 0/1 in dk, true/false in Spark;
* timestamps are ISO text in dk (`...T..:..:...ffffffZ`, ntz without `Z`), microseconds in the
  oracle: dk's text is parsed to microseconds;
* decimal columns are exact TEXT in dk and compare as text with Spark's (same scale). An
  aggregate over a decimal (SUM/AVG) is REAL in SQLite (it converts the TEXT) and a decimal in
  Spark (AVG rounded to scale + 4): dk's double is rounded HALF_UP to the scale of Spark's
  result type, then compared as text;
* float/double values compare to 12 significant digits (summation order differs in
  aggregates); NaN equals NaN;
* binary is base64 in dk's JSON lines, hex in the oracle; nested values are JSON text in dk
  (maps with string keys as objects) and objects/arrays/[key, value] pairs in the oracle.
Rows compare as multisets. A LIMIT without ORDER BY may return any rows: dk must return as many
rows as Spark, all of them rows of the query without LIMIT (Spark's `superset_rows`).

Run: .venv/bin/python -m pytest -q -m interop tests/interop/test_sql_vs_spark.py
"""
import base64
import calendar
import collections
import datetime as dt
import decimal
import json
import math
import os
import sys

import pytest

import sql_oracle

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "python"))
import dkharness as h  # noqa: E402

pytestmark = pytest.mark.interop

# Queries where dk may read more files than Spark, and why (rows must still be equal).
WEAKER_PRUNING = {
    ("dml", "f_like"): "SQLite's LIKE is ASCII case-insensitive, so dk pushes the range "
                       "[UPPER(prefix), next(lower(prefix))), wider than Spark's case-sensitive "
                       "StartsWith; the GLOB twin f_glob prunes like Spark",
    ("all_types", "f_like"): "as dml f_like",
    ("dml", "f_dec_lt"): "numeric order on a decimal (TEXT in dk sql) needs CAST(x AS REAL), an "
                         "expression dk cannot push",
    ("colmap_name", "f_nested"): "a struct field is reached with SQLite's JSON operator on the "
                                 "column's JSON text (st ->> '$.f'), which dk cannot push",
}

CASES = [(t, q[0]) for t, qs in sql_oracle.Q.items() for q in qs]


def load(oracle_dir, table):
    with open(sql_oracle.oracle_path(oracle_dir, table), encoding="utf-8") as f:
        return json.load(f)


def sql_quote(s):
    return "'" + s.replace("'", "''") + "'"


# ---- canonical values --------------------------------------------------------------------------

def _round(x):
    return float("%.12g" % x)


def _float(v):
    if isinstance(v, str):  # "NaN", "Infinity", "-Infinity" (dk TEXT and the oracle alike)
        return ("float", v)
    return ("float", "NaN" if math.isnan(v) else _round(float(v)))


def _ts_micros(text, utc):
    if isinstance(text, int):
        return text
    assert text.endswith("Z") == utc, text
    d = dt.datetime.strptime(text.rstrip("Z"), "%Y-%m-%dT%H:%M:%S.%f")
    return calendar.timegm(d.timetuple()) * 1000000 + d.microsecond


def canon(v, t, side, top=False):
    """Comparable form of value v of Spark type t (JSON form), from `side` "dk" or "spark"."""
    if v is None:
        return None
    if isinstance(t, dict):
        kind = t["type"]
        if side == "dk" and top and isinstance(v, str):
            v = json.loads(v)  # dk sql hands nested values over as JSON text
        if kind == "struct":
            return ("struct", tuple((f["name"], canon(v[f["name"]], f["type"], side))
                                    for f in t["fields"]))
        if kind == "array":
            return ("array", tuple(canon(x, t["elementType"], side) for x in v))
        if kind == "map":
            pairs = v.items() if isinstance(v, dict) else v
            return ("map", tuple(sorted((repr(canon(k, t["keyType"], side)),
                                         canon(x, t["valueType"], side)) for k, x in pairs)))
        raise AssertionError(f"type {t}")
    if t in ("byte", "short", "integer", "long"):
        assert isinstance(v, int) and not isinstance(v, bool), (t, v)
        return v
    if t == "boolean":
        assert v in (0, 1, True, False), v
        return bool(v)
    if t in ("float", "double"):
        return _float(v)
    if t.startswith("decimal"):
        assert isinstance(v, str), (t, v)
        return ("decimal", v)
    if t == "string":
        return v
    if t == "binary":
        return ("binary", v if side == "spark" else base64.b64decode(v).hex())
    if t == "date":
        return ("date", v)
    if t == "timestamp":
        return ("ts", _ts_micros(v, True))
    if t == "timestamp_ntz":
        return ("ntz", _ts_micros(v, False))
    raise AssertionError(f"type {t}")


def _dec_scale(t):
    return int(t[t.index(",") + 1:t.index(")")])


def canon_rows(rows, columns, side, float_cols=()):
    out = []
    for r in rows:
        assert sorted(r) == sorted(c for c, _ in columns), (sorted(r), columns)
        row = []
        for name, t in columns:
            v = r[name]
            if name in float_cols and side == "dk" and isinstance(v, float):
                # SQLite's SUM/AVG over decimal TEXT is REAL; Spark's result is a decimal of
                # the result type's scale: round to it (HALF_UP, as Spark does)
                q = decimal.Decimal(1).scaleb(-_dec_scale(t))
                v = format(decimal.Decimal(repr(v)).quantize(q, decimal.ROUND_HALF_UP), "f")
            row.append(canon(v, t, side, top=True))
        out.append(repr(tuple(row)))
    return sorted(out)


# ---- running dk sql ----------------------------------------------------------------------------

def dk_sql(root, sqlite_sql):
    text = sqlite_sql.format(t="delta_scan(%s)" % sql_quote(root))
    rc, out, err = h.run_dk("sql", text, "--format", "jsonl", "--stats")
    assert rc == 0, f"{text}\n{err[-3000:]}"
    stats = [json.loads(ln) for ln in err.splitlines() if ln.startswith("{")]
    assert len(stats) == 1, err
    return [json.loads(ln) for ln in out.splitlines() if ln.strip()], stats[0]


@pytest.mark.parametrize("table,qname", CASES, ids=[f"{t}-{q}" for t, q in CASES])
def test_dk_sql_equals_spark_sql(oracle_dir, table, qname):
    o = load(oracle_dir, table)
    q = next(x for x in o["queries"] if x["name"] == qname)
    root = os.path.join(oracle_dir, table, o["table_root"])
    got, stats = dk_sql(root, q["sqlite_sql"])
    cols = q["columns"]
    # decimal aggregates are REAL in SQLite: compare that column as doubles on both sides
    float_cols = {c for c, t in cols if isinstance(t, str) and t.startswith("decimal")
                  and any(isinstance(r.get(c), float) for r in got)}
    mine = canon_rows(got, cols, "dk", float_cols)
    if qname.startswith("limit"):
        assert len(got) == len(q["rows"]), (len(got), len(q["rows"]))
        sup = collections.Counter(canon_rows(q["superset_rows"], cols, "spark", float_cols))
        extra = collections.Counter(mine) - sup
        assert not extra, f"rows not in Spark's answer without LIMIT: {list(extra)[:5]}"
    else:
        want = canon_rows(q["rows"], cols, "spark", float_cols)
        if mine != want:
            a, b = collections.Counter(mine), collections.Counter(want)
            pytest.fail(f"{q['sqlite_sql']}\nonly dk: {list(a - b)[:8]}\n"
                        f"only Spark: {list(b - a)[:8]} ({len(mine)} vs {len(want)} rows)")

    # pushdown: what the predicate allows shows in --stats
    for e in q["expect"]:
        key = {"partition": "files_pruned_partition", "stats": "files_pruned_stats",
               "limit": "files_pruned_limit"}[e]
        assert stats[key] > 0, f"{qname}: expected pruning by {e}: {stats}"
    # dk never needs more files than Spark read (partition pruning and min/max skipping
    # are at least as strong), except that a LIMIT may stop Spark early; checked when the
    # statement ran one scan (SQLite's multi-index OR plan runs one per OR term, and
    # files_selected then sums over them)
    if q.get("files_scanned") is not None and not qname.startswith("limit") and \
            stats["scans"] == 1 and (table, qname) not in WEAKER_PRUNING:
        assert stats["files_selected"] <= q["files_scanned"], (stats, q["scan_metrics"])


def test_oracle_has_row_tracking_answers(oracle_dir):
    """The row-tracking comparisons above are not vacuous: Spark's answers carry row ids."""
    for table in ("row_tracking", "row_tracking_dv"):
        o = load(oracle_dir, table)
        for q in o["queries"]:
            assert q["rows"], q["name"]
            names = [c for c, _ in q["columns"]]
            for c in ("row_id", "row_commit_version", "lo", "sum_row_id"):
                if c in names:
                    assert all(r[c] is not None for r in q["rows"]), (q["name"], c)
        ids = [r["row_id"] for r in next(q for q in o["queries"] if q["name"] == "m_all")["rows"]]
        assert len(ids) == len(set(ids))


def test_every_table_with_queries_has_an_answer(oracle_dir):
    for table in sql_oracle.Q:
        o = load(oracle_dir, table)
        assert o["spec_sha"] == sql_oracle.spec_sha(table)
        assert [q["name"] for q in o["queries"]] == [q[0] for q in sql_oracle.Q[table]]
