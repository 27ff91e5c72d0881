#!/usr/bin/env python3
"""Oracle vectors for dk's value expressions (src/expr/value.c): Spark SQL (pyspark 4.2, ANSI mode
on, its default) evaluates random arithmetic / CASE / CAST / function expressions over a small
table, and records each result's type and every row's value, or that the expression failed
(an ANSI error: overflow, division by zero, invalid cast). tests/unit/test_expr_value.c parses
the same expressions with dk and must reproduce the type and values (or fail likewise).

Output: tests/unit/data/value_vectors.jsonl
  line 1: {"columns": [[name, spark type], ...], "rows": [[...], ...]}
  then:   {"expr": <dk text>, "type": <Spark simpleString>, "values": [...]} or
          {"expr": ..., "error": <Spark's error class>}
Values: integers as numbers, decimals as strings (Spark's toPlainString), floats/doubles as
their repr (NaN / Infinity / -Infinity as strings), dates "yyyy-mm-dd", timestamps as
microseconds since the epoch, strings, booleans, null.

Run: .venv/bin/python tests/interop/gen_value_vectors.py [OUT]   (needs scripts/install_spark.sh;
deterministic: fixed seed)
"""
import datetime as dt
import decimal
import json
import math
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

SEED = 20261202
N_ROWS = 40
N_CASES = 900

rnd = random.Random(SEED)

COLUMNS = [("i8", "tinyint"), ("i16", "smallint"), ("i32", "int"), ("i64", "bigint"),
           ("f32", "float"), ("f64", "double"), ("d1", "decimal(10,2)"), ("d2", "decimal(38,10)"),
           ("d3", "decimal(5,0)"), ("s", "string"), ("dt", "date"), ("ts", "timestamp"),
           ("b", "boolean")]
NUM = ["i8", "i16", "i32", "i64", "f32", "f64", "d1", "d2", "d3"]
INTS = ["i8", "i16", "i32", "i64"]


def gen_rows():
    rows = []
    edge = [0, 1, -1, 2, 7, 100, -100]
    for r in range(N_ROWS):
        def pick(gen, p=0.12):
            return None if rnd.random() < p else gen()
        big = r in (3, 17)  # rows whose integers overflow when added / multiplied
        rows.append([
            pick(lambda: 127 if big else rnd.choice(edge + [rnd.randint(-128, 127)])),
            pick(lambda: 32767 if big else rnd.choice(edge + [rnd.randint(-32768, 32767)])),
            pick(lambda: 2147483647 if big else rnd.choice(edge + [rnd.randint(-10**6, 10**6)])),
            pick(lambda: 9223372036854775807 if big else rnd.choice(edge + [rnd.randint(-10**12, 10**12)])),
            pick(lambda: rnd.choice([0.0, 1.5, -2.25, 3.0, 0.1, 1e10, float("nan")])),
            pick(lambda: rnd.choice([0.0, 1.5, -2.5, 0.1, 1e-5, 123456789.125, 2.5, -0.0,
                                     float("inf"), float("nan")]) if r % 9 else rnd.uniform(-1e3, 1e3)),
            pick(lambda: decimal.Decimal(rnd.randint(-10**6, 10**6)).scaleb(-2)),
            pick(lambda: decimal.Decimal(rnd.randint(-10**15, 10**15)).scaleb(-10)),
            pick(lambda: decimal.Decimal(rnd.choice([0, 1, -1, 99999, -99999, rnd.randint(-999, 999)]))),
            pick(lambda: rnd.choice(["", "a", "abc", " pad ", "Hello", "héllo", "ÉTÉ", "ßx",
                                     "12", "-7", "3.5", "x y z", "\U0001F600ok", "2024-02-29"])),
            pick(lambda: dt.date(2024, 1, 1) + dt.timedelta(days=rnd.randint(-4000, 4000))),
            pick(lambda: dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc) +
                 dt.timedelta(microseconds=rnd.randint(-10**14, 10**14))),
            pick(lambda: rnd.random() < 0.5),
        ])
    return rows


def lit_int():
    return str(rnd.choice([0, 1, 2, 3, -1, 10, 100, 1000000, 2147483647, 3000000000]))


def lit_dec():
    return rnd.choice(["1.5", "0.25", "-3.125", "100.00", "0.001"])


def numeric(depth=0):
    k = rnd.random()
    if depth > 2 or k < 0.45:
        return rnd.choice(NUM) if rnd.random() < 0.8 else rnd.choice([lit_int(), lit_dec()])
    if k < 0.8:
        op = rnd.choice(["+", "-", "*", "/", "%", "+", "-", "*"])
        return "(%s %s %s)" % (numeric(depth + 1), op, numeric(depth + 1))
    f = rnd.choice(["abs", "negative", "round", "floor", "ceil", "coalesce", "greatest", "least"])
    if f == "round":
        return "round(%s, %d)" % (numeric(depth + 1), rnd.choice([0, 1, 2, -1]))
    if f in ("coalesce", "greatest", "least"):
        return "%s(%s, %s)" % (f, numeric(depth + 1), numeric(depth + 1))
    return "%s(%s)" % (f, numeric(depth + 1))


def pred():
    c = rnd.choice(NUM)
    return rnd.choice(["%s > %s" % (c, lit_int()), "%s IS NULL" % c, "b", "NOT b",
                       "%s = %s" % (c, rnd.choice(NUM)), "s = 'abc'", "%s < 0" % c])


def string_expr():
    return rnd.choice([
        "upper(s)", "lower(s)", "length(s)", "trim(s)", "ltrim(s)", "rtrim(s)",
        "substring(s, %d)" % rnd.choice([0, 1, 2, -2, 10]),
        "substring(s, %d, %d)" % (rnd.choice([0, 1, 2, -3]), rnd.choice([0, 1, 2, 5])),
        "concat(s, '-', %s)" % rnd.choice(["i32", "d1", "f64", "dt", "b", "s"]),
        "s || '!'", "coalesce(s, 'none')", "nullif(s, 'a')", "if(b, s, 'no')",
        "CAST(%s AS STRING)" % rnd.choice(NUM + ["dt", "ts", "b"]),
        "CAST(s AS %s)" % rnd.choice(["INT", "BIGINT", "DOUBLE", "DECIMAL(10,2)", "DATE"]),
    ])


def case_expr():
    n = rnd.randint(1, 3)
    parts = " ".join("WHEN %s THEN %s" % (pred(), numeric(2)) for _ in range(n))
    els = " ELSE %s" % numeric(2) if rnd.random() < 0.7 else ""
    return "CASE %s%s END" % (parts, els)


def cast_expr():
    return "CAST(%s AS %s)" % (numeric(1), rnd.choice(["TINYINT", "SMALLINT", "INT", "BIGINT",
                                                      "FLOAT", "DOUBLE", "DECIMAL(6,2)",
                                                      "DECIMAL(20,5)", "BOOLEAN"]))


def date_expr():
    return rnd.choice(["date_add(dt, %s)" % rnd.choice(["1", "-30", "i8"]),
                       "date_sub(dt, %s)" % rnd.choice(["1", "365", "i8"]),
                       "dt + 1", "dt - i8", "CAST(ts AS DATE)", "CAST(dt AS TIMESTAMP)"])


def gen_exprs():
    out = []
    fixed = ["CASE WHEN i32 = 0 THEN NULL ELSE 100 / i32 END", "i32 + 1", "i64 * 2", "i8 + i8",
             "d1 + d2", "d1 * d1", "d1 / d3", "d2 / d1", "i32 / 2", "i32 % 3", "f32 + f32",
             "f64 / 0", "i32 % 0", "CASE WHEN b THEN i32 WHEN NOT b THEN i64 END",
             "coalesce(i8, i16, i32)", "greatest(i32, 5, d1)", "abs(i64)", "negative(i32)",
             "round(d1, 1)", "round(f64, 0)", "floor(d1)", "ceil(f64)", "1 + 2 * 3", "-i32",
             "- - i16", "i32 - -1", "(i32 + 1) * (i16 - 1)"]
    out += fixed
    while len(out) < N_CASES:
        k = rnd.random()
        if k < 0.45:
            out.append(numeric())
        elif k < 0.65:
            out.append(string_expr())
        elif k < 0.8:
            out.append(case_expr())
        elif k < 0.92:
            out.append(cast_expr())
        else:
            out.append(date_expr())
    return out


def enc(v):
    if v is None:
        return None
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return repr(v)
    if isinstance(v, decimal.Decimal):
        return format(v, "f")
    if isinstance(v, dt.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=dt.timezone.utc)
        d = v - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
        return (d.days * 86400 + d.seconds) * 1000000 + d.microseconds
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, (bytes, bytearray)):
        return v.hex()
    return v


def main():
    out_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(HERE), "unit", "data", "value_vectors.jsonl")
    from sparkenv import get_spark
    from pyspark.sql.types import (BooleanType, ByteType, DateType, DecimalType, DoubleType,
                                   FloatType, IntegerType, LongType, ShortType, StringType,
                                   StructField, StructType, TimestampType)
    spark = get_spark("dk-value-vectors")
    types = {"tinyint": ByteType(), "smallint": ShortType(), "int": IntegerType(),
             "bigint": LongType(), "float": FloatType(), "double": DoubleType(),
             "decimal(10,2)": DecimalType(10, 2), "decimal(38,10)": DecimalType(38, 10),
             "decimal(5,0)": DecimalType(5, 0), "string": StringType(), "date": DateType(),
             "timestamp": TimestampType(), "boolean": BooleanType()}
    schema = StructType([StructField("rid", IntegerType())] +
                        [StructField(n, types[t]) for n, t in COLUMNS])
    rows = gen_rows()
    df = spark.createDataFrame([[i] + r for i, r in enumerate(rows)], schema)
    df.createOrReplaceTempView("t")
    exprs = gen_exprs()
    lines = [json.dumps({"columns": COLUMNS, "rows": [[enc(v) for v in r] for r in rows]})]

    def one(e):
        try:
            r = spark.sql("SELECT %s AS v FROM t ORDER BY rid" % e)
            typ = r.schema.fields[0].dataType.simpleString()
            vals = [enc(x[0]) for x in r.collect()]
            return {"expr": e, "type": typ, "values": vals}
        except Exception as ex:  # noqa: BLE001 - Spark's analysis and ANSI runtime errors
            msg = str(ex)
            cls = msg[msg.find("[") + 1:msg.find("]")] if "[" in msg else type(ex).__name__
            return {"expr": e, "error": cls}

    for i, e in enumerate(exprs):
        lines.append(json.dumps(one(e)))
        if i % 100 == 0:
            print("%d/%d" % (i, len(exprs)), flush=True)
    with open(out_path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote", out_path)


if __name__ == "__main__":
    main()
