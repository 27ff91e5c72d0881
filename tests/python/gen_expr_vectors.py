#!/usr/bin/env python3
"""Generate oracle vectors for dk's predicate evaluator and statistics skipping.

DuckDB (a real SQL engine with the same three-valued logic, bytewise string order, NaN
ordering and exact decimal comparisons as Spark) evaluates random predicates over a random
table; dk must reproduce every row's TRUE/FALSE/NULL. The table is also cut into "files" of
consecutive rows with Delta-style statistics JSON (minValues/maxValues/nullCount/numRecords,
32-character string truncation with Delta's tie-breaker or plain prefix truncation,
millisecond-truncated timestamps, missing or partial stats), so the C test can check that
every file dk's skipping logic prunes has no TRUE row according to DuckDB.

Output: tests/unit/data/expr_vectors.jsonl
  line 1: {"columns": [...], "rows": [[...], ...], "files": [{"start", "end", "stats"}]}
  then:   {"expr": <dk text>, "sql": <DuckDB text>, "result": "TFN..."}  (one char per row)

Run: .venv/bin/python tests/python/gen_expr_vectors.py [OUT]  (deterministic: fixed seed)
"""
import datetime as dt
import decimal
import json
import math
import os
import random
import re
import sys

import duckdb
import pyarrow as pa

SEED = 20241129
N_ROWS = 240
ROWS_PER_FILE = 12
N_CASES = 1500
N_CASES2 = 400  # BETWEEN / isnan cases, generated after the first N_CASES

rnd = random.Random(SEED)

COLUMNS = [
    ("i16", "int16"), ("i32", "int32"), ("i64", "int64"), ("dbl", "double"),
    ("str", "string"), ("dt", "date"), ("ts", "timestamp"), ("dec", "decimal(10,2)"),
    ("flag", "bool"), ("bin", "binary"), ("Mixed", "int32"),
    ("st", "struct"),  # struct<x: int32, y: string>
    ("big", "decimal(38,10)"), ("ntz", "timestamp_ntz"),
]
BIG = ["9999999999999999999999999999.9999999999", "-9999999999999999999999999999.9999999999",
       "0.0000000001", "-0.0000000001", "10.5", "9223372036854775807", "-9223372036854775808",
       "9223372036854775807.5", "12345678901234567890.1234567890", "0", "1"]

LONG = "abcdefghijklmnopqrstuvwxyz0123456789"  # 36 chars: longer than the 32-char stats prefix
STRINGS = ["", "a", "ab", "abc", "abd", "b", "B", "ba", "z", "\u00e9", "\u00e9t\u00e9",
           "\U0001F600", "a\U0001F600", "5", "-3", "it's", LONG, LONG + "x", LONG[:32] + "~~",
           LONG[:32], LONG[:31] + "\U0001F600" + "zz", "\u007f\u007f"]
BASE_DATE = dt.date(2024, 1, 1)
EPOCH = dt.datetime(1970, 1, 1)


def maybe_null(gen, p=0.15):
    return None if rnd.random() < p else gen()


def gen_row():
    r = {}
    r["i16"] = maybe_null(lambda: rnd.choice([-32768, -5, 0, 1, 5, 10, 11, 100, 32767]))
    r["i32"] = maybe_null(lambda: rnd.randint(-20, 20))
    r["i64"] = maybe_null(lambda: rnd.choice([rnd.randint(-20, 20), 2**62, -2**62, 2**63 - 1,
                                             -2**63, 9007199254740993]))
    r["dbl"] = maybe_null(lambda: rnd.choice([rnd.randint(-20, 20) / 2, 0.1, -0.0, 0.0, 1e300,
                                             float("nan"), float("inf"), -float("inf"), 10.5]))
    r["str"] = maybe_null(lambda: rnd.choice(STRINGS))
    r["dt"] = maybe_null(lambda: BASE_DATE + dt.timedelta(days=rnd.randint(-40, 40)))
    r["ts"] = maybe_null(lambda: dt.datetime(2024, 1, 1) + dt.timedelta(
        seconds=rnd.randint(-200000, 200000), microseconds=rnd.choice([0, 1, 999, 123456, 999999])))
    r["dec"] = maybe_null(lambda: decimal.Decimal(rnd.randint(-3000, 3000)) / 100)
    r["flag"] = maybe_null(lambda: rnd.random() < 0.5)
    r["bin"] = maybe_null(lambda: bytes(rnd.choice([b"", b"\x00", b"\x0a", b"\x0a\x0b", b"\xff"])))
    r["Mixed"] = maybe_null(lambda: rnd.randint(-3, 3))
    r["st"] = maybe_null(lambda: {"x": maybe_null(lambda: rnd.randint(-5, 5)),
                                  "y": maybe_null(lambda: rnd.choice(STRINGS))})
    r["big"] = maybe_null(lambda: decimal.Decimal(rnd.choice(BIG)))
    r["ntz"] = maybe_null(lambda: dt.datetime(2024, 1, 1) + dt.timedelta(
        seconds=rnd.randint(-200000, 200000), microseconds=rnd.choice([0, 1, 999, 123456])))
    return r


ROWS = [gen_row() for _ in range(N_ROWS)]
# a few files with deliberately narrow values so that skipping has something to prune
for f in range(0, N_ROWS // ROWS_PER_FILE, 3):
    for r in ROWS[f * ROWS_PER_FILE:(f + 1) * ROWS_PER_FILE]:
        if r["i32"] is not None:
            r["i32"] = 100 + f
        if r["str"] is not None:
            r["str"] = "q" + str(f)
        if r["dt"] is not None:
            r["dt"] = BASE_DATE + dt.timedelta(days=365 + f)
for f in range(1, N_ROWS // ROWS_PER_FILE, 4):
    for r in ROWS[f * ROWS_PER_FILE:(f + 1) * ROWS_PER_FILE]:
        r["i64"] = None
        r["st"] = None


def arrow_table():
    st_type = pa.struct([("x", pa.int32()), ("y", pa.string())])
    arrays = {
        "rid": pa.array(range(N_ROWS), pa.int32()),
        "i16": pa.array([r["i16"] for r in ROWS], pa.int16()),
        "i32": pa.array([r["i32"] for r in ROWS], pa.int32()),
        "i64": pa.array([r["i64"] for r in ROWS], pa.int64()),
        "dbl": pa.array([r["dbl"] for r in ROWS], pa.float64()),
        "str": pa.array([r["str"] for r in ROWS], pa.string()),
        "dt": pa.array([r["dt"] for r in ROWS], pa.date32()),
        "ts": pa.array([r["ts"] for r in ROWS], pa.timestamp("us")),
        "dec": pa.array([r["dec"] for r in ROWS], pa.decimal128(10, 2)),
        "flag": pa.array([r["flag"] for r in ROWS], pa.bool_()),
        "bin": pa.array([r["bin"] for r in ROWS], pa.binary()),
        "Mixed": pa.array([r["Mixed"] for r in ROWS], pa.int32()),
        "st": pa.array([r["st"] for r in ROWS], st_type),
        "big": pa.array([r["big"] for r in ROWS], pa.decimal128(38, 10)),
        "ntz": pa.array([r["ntz"] for r in ROWS], pa.timestamp("us")),
    }
    return pa.table(arrays)


# ---- literals --------------------------------------------------------------------------------

def q(s):
    return "'" + s.replace("'", "''") + "'"


def lit(kind):
    """Returns (dk_text, duckdb_text) of a literal of the given kind."""
    if rnd.random() < 0.05:
        return ("NULL", "NULL")
    if kind == "int":
        v = rnd.choice([rnd.randint(-21, 21), 0, 5, 10, 11, 100, 104, 32767, -32768, 2**40,
                        2**63 - 1, -2**63, 9007199254740992])
        return (str(v), str(v))
    if kind == "dec":
        v = rnd.choice(["10.5", "0.5", "-3.25", "5.00", "10.555", "-0.01", "20.999", "3.1"])
        return (v, v)
    if kind == "double":
        v = rnd.choice(["1.5", "-0.0", "0.0", "10.5", "NaN", "Infinity", "-Infinity", "1e300",
                        "0.1", "5"])
        return ("DOUBLE '%s'" % v, "CAST('%s' AS DOUBLE)" % v)
    if kind == "str":
        s = rnd.choice(STRINGS + ["aa", "abcz", "q3", "q9", "\uffff", LONG[:32] + "\U0010FFFF"])
        return (q(s), q(s))
    if kind == "date":
        d = BASE_DATE + dt.timedelta(days=rnd.randint(-45, 420))
        return ("DATE '%s'" % d, "DATE '%s'" % d)
    if kind == "ts":
        t = dt.datetime(2024, 1, 1) + dt.timedelta(seconds=rnd.randint(-210000, 210000),
                                                   microseconds=rnd.choice([0, 1, 999, 123456]))
        s = t.strftime("%Y-%m-%d %H:%M:%S") + (".%06d" % t.microsecond if t.microsecond else "")
        return ("TIMESTAMP '%s'" % s, "TIMESTAMP '%s'" % s)
    if kind == "bigdec":
        v = rnd.choice(BIG + ["1.00000000001", "-99999999999999999999999999999", "10.50",
                              "99999999999999999999999999999.5", "0.00000000005"])
        return (v, v)
    if kind == "ntz":
        t = dt.datetime(2024, 1, 1) + dt.timedelta(seconds=rnd.randint(-210000, 210000),
                                                   microseconds=rnd.choice([0, 1, 999, 123456]))
        s = t.strftime("%Y-%m-%d %H:%M:%S") + (".%06d" % t.microsecond if t.microsecond else "")
        return ("TIMESTAMP_NTZ '%s'" % s, "TIMESTAMP '%s'" % s)
    if kind == "bool":
        v = rnd.choice(["TRUE", "FALSE"])
        return (v, v)
    if kind == "bin":
        b = rnd.choice(["", "00", "0a", "0a0b", "ff", "0a0c"])
        duck = "'" + "".join("\\x" + b[i:i + 2] for i in range(0, len(b), 2)) + "'::BLOB"
        return ("X'%s'" % b, duck)
    raise ValueError(kind)


# column name -> literal kinds it may be compared with (Spark-style implicit coercions)
COL_KINDS = {
    "i16": ["int", "dec", "double"], "i32": ["int", "dec", "double", "strnum"],
    "i64": ["int", "dec", "double"], "dbl": ["double", "int", "dec"], "str": ["str"],
    "dt": ["date", "ts", "strdate"], "ts": ["ts", "date"], "dec": ["dec", "int", "double"],
    "flag": ["bool"], "bin": ["bin"], "mixed": ["int"], "st.x": ["int"], "st.y": ["str"],
    "big": ["bigdec", "int", "dec"], "ntz": ["ntz", "ts", "date"],
}
OPS = [("=", "="), ("!=", "!="), ("<>", "<>"), ("<", "<"), ("<=", "<="), (">", ">"),
       (">=", ">="), ("==", "="), ("<=>", "IS NOT DISTINCT FROM")]


def lit_for(kind):
    if kind == "strnum":
        v = rnd.choice(["5", "-3", "0", "17"])
        return (q(v), q(v))
    if kind == "strdate":
        d = BASE_DATE + dt.timedelta(days=rnd.randint(-45, 45))
        return (q(str(d)), q(str(d)))
    return lit(kind)


def atom():
    col = rnd.choice(list(COL_KINDS))
    duck_col = {"mixed": "Mixed"}.get(col, col)
    r = rnd.random()
    if r < 0.45:
        kind = rnd.choice(COL_KINDS[col])
        lt, ld = lit_for(kind)
        op, dop = rnd.choice(OPS)
        if rnd.random() < 0.2:  # literal on the left
            return ("%s %s %s" % (lt, op, col), "(%s %s %s)" % (ld, dop, duck_col))
        return ("%s %s %s" % (col, op, lt), "(%s %s %s)" % (duck_col, dop, ld))
    if r < 0.55:
        neg = rnd.random() < 0.5
        c = rnd.choice([col, col, "st"])
        dc = {"mixed": "Mixed"}.get(c, c)
        return ("%s IS %sNULL" % (c, "NOT " if neg else ""),
                "(%s IS %sNULL)" % (dc, "NOT " if neg else ""))
    if r < 0.68:
        kind = rnd.choice(COL_KINDS[col])
        items = [lit_for(kind) for _ in range(rnd.randint(1, 4))]
        neg = rnd.random() < 0.3
        return ("%s %sIN (%s)" % (col, "NOT " if neg else "", ", ".join(i[0] for i in items)),
                "(%s %sIN (%s))" % (duck_col, "NOT " if neg else "", ", ".join(i[1] for i in items)))
    if r < 0.78:
        c = rnd.choice(["str", "st.y"])
        p = rnd.choice(["", "a", "ab", "q", "q1", "\u00e9", LONG[:10], LONG[:33], "\U0001F600"])
        form = rnd.randint(0, 2)
        if form == 0:
            return ("STARTS_WITH(%s, %s)" % (c, q(p)), "starts_with(%s, %s)" % (c, q(p)))
        neg = form == 2
        pat = p + "%"
        if rnd.random() < 0.5:  # general patterns: '%' and '_' anywhere (no escapes)
            pat = rnd.choice(["%b%", "a%c", "_b%", "%a_", "_", "__", "%", "", "a%b%c", "%\u00e9%",
                              "_\U0001F600%", "%z", "a_", "%5", "q_", "%-%", "abc%x%"])
        return ("%s %sLIKE %s" % (c, "NOT " if neg else "", q(pat)),
                "(%s %sLIKE %s)" % (c, "NOT " if neg else "", q(pat)))
    if r < 0.86:
        pairs = [("i32", "i16"), ("i32", "i64"), ("str", "st.y"), ("i32", "st.x"), ("dbl", "dbl"),
                 ("dt", "dt"), ("dec", "dec"), ("i32", "mixed"), ("big", "big"), ("ntz", "ntz")]
        a, b = rnd.choice(pairs)
        op, dop = rnd.choice(OPS)
        da, db = ({"mixed": "Mixed"}.get(x, x) for x in (a, b))
        return ("%s %s %s" % (a, op, b), "(%s %s %s)" % (da, dop, db))
    if r < 0.93:
        form = rnd.choice(["flag", "NOT flag", "flag = TRUE", "flag != FALSE", "flag <=> NULL"])
        duck = form.replace("<=> NULL", "IS NOT DISTINCT FROM NULL")
        return (form, "(%s)" % duck)
    form = rnd.choice([("1 = 1", "(1 = 1)"), ("NULL = i32", "(NULL = i32)"), ("TRUE", "TRUE"),
                       ("NULL", "NULL"), ("'a' < 'b'", "('a' < 'b')"),
                       ("(i32 > 3) = FALSE", "((i32 > 3) = FALSE)")])
    return form


def atom_between_isnan():
    """BETWEEN / NOT BETWEEN / isnan atoms (appended after the first N_CASES, so the earlier
    cases keep their random sequence). DuckDB's isnan(NULL) is NULL where Spark's is FALSE:
    the DuckDB side wraps it in coalesce(..., false)."""
    r = rnd.random()
    if r < 0.35:
        c = rnd.choice(["dbl", "dbl", "i32", "dec"])
        return ("isnan(%s)" % c, "coalesce(isnan(CAST(%s AS DOUBLE)), false)" % c)
    col = rnd.choice(list(COL_KINDS))
    duck_col = {"mixed": "Mixed"}.get(col, col)
    kind = rnd.choice(COL_KINDS[col])
    (lo, dlo), (hi, dhi) = lit_for(kind), lit_for(kind)
    neg = "NOT " if rnd.random() < 0.35 else ""
    return ("%s %sBETWEEN %s AND %s" % (col, neg, lo, hi),
            "(%s %sBETWEEN %s AND %s)" % (duck_col, neg, dlo, dhi))


def pred2(depth=0):
    r = rnd.random()
    if depth >= 2 or r < 0.5:
        return atom_between_isnan()
    a, b = pred2(depth + 1), (pred(depth + 1) if rnd.random() < 0.5 else pred2(depth + 1))
    if r < 0.7:
        return ("(%s) AND (%s)" % (a[0], b[0]), "(%s AND %s)" % (a[1], b[1]))
    if r < 0.9:
        return ("(%s) OR (%s)" % (a[0], b[0]), "(%s OR %s)" % (a[1], b[1]))
    return ("NOT (%s)" % a[0], "(NOT %s)" % a[1])


def pred(depth=0):
    r = rnd.random()
    if depth >= 3 or r < 0.4:
        return atom()
    if r < 0.65:
        a, b = pred(depth + 1), pred(depth + 1)
        return ("(%s) AND (%s)" % (a[0], b[0]), "(%s AND %s)" % (a[1], b[1]))
    if r < 0.9:
        a, b = pred(depth + 1), pred(depth + 1)
        return ("(%s) OR (%s)" % (a[0], b[0]), "(%s OR %s)" % (a[1], b[1]))
    a = pred(depth + 1)
    return ("NOT (%s)" % a[0], "(NOT %s)" % a[1])


# ---- statistics -------------------------------------------------------------------------------

def utf16_len(s):
    return sum(2 if ord(c) > 0xFFFF else 1 for c in s)


def take_units(s, n):
    out, k = [], 0
    for c in s:
        w = 2 if ord(c) > 0xFFFF else 1
        if k + w > n:
            break
        out.append(c)
        k += w
    return "".join(out)


def trunc_max(s, style):
    if utf16_len(s) <= 32:
        return s
    pre = take_units(s, 32)
    if style == "prefix":  # older writers: plain prefix (not an upper bound)
        return pre
    nxt = s[len(pre)]
    return pre + ("\u007f" if ord(nxt) < 0x7F else "\U0010FFFF")


def ts_ms(t):
    micros = (t - EPOCH) // dt.timedelta(microseconds=1)
    ms = micros // 1000
    return (EPOCH + dt.timedelta(milliseconds=ms)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def json_val(name, v):
    if isinstance(v, decimal.Decimal):
        return "@@NUM:%s@@" % v  # emitted as an exact JSON number (see file_stats)
    if name == "dt":
        return str(v)
    if name == "ts":
        return ts_ms(v)
    if name == "ntz":
        return ts_ms(v)[:-1]  # no zone for timestamp_ntz
    return v


def file_stats(rows, fidx):
    mode = fidx % 7
    if mode == 6:
        return None  # no stats at all
    stats = {"numRecords": len(rows)}
    if mode == 5:
        return json.dumps(stats)  # numRecords only
    mins, maxs, nulls = {}, {}, {}
    style = "prefix" if fidx % 2 else "tiebreak"
    leaves = ["i16", "i32", "i64", "dbl", "str", "dt", "ts", "dec", "Mixed", "st.x", "st.y", "big",
              "ntz"]
    for leaf in leaves:
        if mode == 4 and leaf in ("i32", "str"):
            continue  # partial stats: column not indexed
        if leaf.startswith("st."):
            vals = [r["st"][leaf[3:]] if r["st"] is not None else None for r in rows]
            target = (mins.setdefault("st", {}), maxs.setdefault("st", {}),
                      nulls.setdefault("st", {}))
            key = leaf[3:]
        else:
            vals = [r[leaf] for r in rows]
            target = (mins, maxs, nulls)
            key = leaf
        nn = [v for v in vals if v is not None]
        target[2][key] = len(vals) - len(nn)
        if not nn:
            continue
        if leaf == "dbl" and any(math.isnan(v) or math.isinf(v) for v in nn):
            continue  # NaN/Infinity are not JSON numbers: leave these double stats out
        lo, hi = min(nn), max(nn)
        if leaf in ("str", "st.y"):
            lo_b = min(nn, key=lambda s: s.encode())
            hi_b = max(nn, key=lambda s: s.encode())
            target[0][key] = take_units(lo_b, 32)
            target[1][key] = trunc_max(hi_b, style)
            continue
        if leaf == "dbl":
            if lo == 0:
                lo = -0.0 if rnd.random() < 0.5 else 0.0
        target[0][key] = json_val(leaf, lo)
        target[1][key] = json_val(leaf, hi)
    stats.update({"minValues": mins, "maxValues": maxs, "nullCount": nulls})
    text = json.dumps(stats, ensure_ascii=rnd.random() < 0.5, allow_nan=False)
    return re.sub(r'"@@NUM:([^@]*)@@"', r"\1", text)


# ---- main ------------------------------------------------------------------------------------

def row_json(r):
    out = []
    for name, _ in COLUMNS:
        v = r[name]
        if v is None:
            out.append(None)
        elif name == "dbl":
            if math.isnan(v):
                out.append("NaN")
            elif math.isinf(v):
                out.append("Infinity" if v > 0 else "-Infinity")
            else:
                out.append(v)
        elif name in ("dec", "big"):
            out.append(str(v))
        elif name == "dt":
            out.append((v - dt.date(1970, 1, 1)).days)
        elif name in ("ts", "ntz"):
            out.append((v - EPOCH) // dt.timedelta(microseconds=1))
        elif name == "bin":
            out.append(v.hex())
        else:
            out.append(v)
    return out


def main():
    out_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "unit", "data", "expr_vectors.jsonl")
    con = duckdb.connect()
    tbl = arrow_table()
    con.register("t", tbl)
    files = []
    for f in range(N_ROWS // ROWS_PER_FILE):
        s, e = f * ROWS_PER_FILE, (f + 1) * ROWS_PER_FILE
        files.append({"start": s, "end": e, "stats": file_stats(ROWS[s:e], f)})
    header = {"seed": SEED, "columns": [{"name": n, "type": t} for n, t in COLUMNS],
              "rows": [row_json(r) for r in ROWS], "files": files}
    lines = [json.dumps(header, allow_nan=False)]
    seen = set()
    while len(lines) - 1 < N_CASES + N_CASES2:
        dk_text, sql = pred() if len(lines) - 1 < N_CASES else pred2()
        if dk_text in seen:
            continue
        seen.add(dk_text)
        try:
            res = con.execute("SELECT %s FROM t ORDER BY rid" % sql).fetchall()
        except duckdb.Error:
            continue  # DuckDB rejects it (e.g. a decimal cast overflowing 38 digits): no oracle

        chars = "".join("N" if v is None else ("T" if v else "F") for (v,) in res)
        lines.append(json.dumps({"expr": dk_text, "sql": sql, "result": chars}))
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    with open(out_path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote %d cases to %s" % (len(lines) - 1, out_path), file=sys.stderr)


if __name__ == "__main__":
    main()
