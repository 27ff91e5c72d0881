#!/usr/bin/env python3
"""Spark's answers for predicates on a Spark-written float column, for
tests/interop/test_float_skipping_vs_spark.py (issue #18 item 6).

Writes OUTDIR/floats/delta/ with delta-spark: one data file per append, each holding float
values chosen so that file minima and maxima are decimals a float cannot hold exactly (0.3,
0.1, 16777217), the float extremes, a denormal, -0.0 and 0.0, NaN and NULL. Delta-Spark writes
each file's minValues/maxValues as the float's shortest text. For every comparison operator
(=, !=, <, <=, >, >=, <=>) and every literal at, one float step above and one below each
file's min and max, plus NaN, 0.0 and -0.0, Spark SQL evaluates `f op CAST('lit' AS FLOAT)`
over the table; the ids of the rows it returns go to OUTDIR/floats/answers.json with the
predicate in dk's syntax. Idempotent: nothing is done when answers.json exists.

Run: .venv/bin/python tests/interop/float_oracle.py OUTDIR
"""
import json
import os
import shutil
import struct
import sys

import math

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

FILES = [
    [0.1, 0.2, 0.3],
    [-0.0, 0.0, 1e-7, 3.4028234663852886e38],
    [float("nan"), 1.0, 2.5, None],
    [-3.4028234663852886e38, 1.401298464324817e-45, 16777217.0, 0.3],
    [-1.5, -0.0],
]
OPS = ["=", "!=", "<", "<=", ">", ">=", "<=>"]


def f32(x):
    """x rounded to the nearest 32-bit float (as a Python float)."""
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:  # above FLT_MAX as a double, maybe still FLT_MAX as a float
        big = struct.unpack("<f", struct.pack("<I", 0x7F7FFFFF))[0]
        return math.copysign(big if abs(x) < 3.4028235677973366e38 else math.inf, x)


def next_f32(x, up):
    """The next 32-bit float above (up) or below x (finite, non-NaN x)."""
    if x == 0:
        b = 1 if up else 0x80000001
    else:
        b = struct.unpack("<I", struct.pack("<f", x))[0]
        b += 1 if (x > 0) == up else -1
    return struct.unpack("<f", struct.pack("<I", b))[0]


def lit_text(v):
    """The shortest text that reads back as the float v."""
    if math.isnan(v):
        return "NaN"
    if v == 0:
        return "-0.0" if math.copysign(1, v) < 0 else "0.0"
    for p in range(1, 10):
        t = "%.*g" % (p, v)
        if f32(float(t)) == v:
            return t
    return repr(v)


def literals(stats):
    """The file bounds, one float step either side, NaN and both zeros."""
    out = {"NaN", "0.0", "-0.0"}
    for mn, mx in stats:
        for b in (mn, mx):
            if b is None or (isinstance(b, str) and b == "NaN"):
                continue
            x = f32(float(b))
            for y in (x, next_f32(x, True), next_f32(x, False)):
                if math.isfinite(y):
                    out.add(lit_text(y))
    return sorted(out, key=lambda s: (float(s), s))


def main():
    outdir = os.path.join(sys.argv[1], "floats")
    answers = os.path.join(outdir, "answers.json")
    if os.path.exists(answers):
        return
    shutil.rmtree(outdir, ignore_errors=True)
    os.makedirs(outdir)
    root = os.path.join(outdir, "delta")
    from sparkenv import get_spark
    from pyspark.sql.types import FloatType, IntegerType, StructField, StructType
    spark = get_spark("dk-float-oracle")
    schema = StructType([StructField("id", IntegerType()), StructField("f", FloatType())])
    nid = 0
    for vals in FILES:
        rows = []
        for v in vals:
            rows.append((nid, None if v is None else float(f32(v))))
            nid += 1
        spark.createDataFrame(rows, schema).coalesce(1).write.format("delta").mode("append").save(root)
    stats = []
    for name in sorted(os.listdir(os.path.join(root, "_delta_log"))):
        if not name.endswith(".json"):
            continue
        for line in open(os.path.join(root, "_delta_log", name)):
            a = json.loads(line).get("add")
            if a and a.get("stats"):
                s = json.loads(a["stats"])
                stats.append((s["minValues"].get("f"), s["maxValues"].get("f")))
    cases = []
    lits = literals(stats)
    exprs = []
    for op in OPS:
        for lit in lits:
            exprs.append((f"f {op} FLOAT '{lit}'", f"f {op} CAST('{lit}' AS FLOAT)"))
    df = spark.read.format("delta").load(root)
    df.createOrReplaceTempView("t")
    cols = ", ".join(f"({sql}) AS p{i}" for i, (_, sql) in enumerate(exprs))
    got = spark.sql(f"SELECT id, {cols} FROM t").collect()
    for i, (dk, sql) in enumerate(exprs):
        ids = sorted(r["id"] for r in got if r[f"p{i}"] is True)
        cases.append({"dk": dk, "spark": sql, "ids": ids})
    with open(answers + ".tmp", "w") as f:
        json.dump({"root": root, "file_stats": stats, "cases": cases}, f, indent=1)
    os.replace(answers + ".tmp", answers)
    spark.stop()


if __name__ == "__main__":
    main()
