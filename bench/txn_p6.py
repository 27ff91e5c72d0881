#!/usr/bin/env python3
"""P6 — append 6M rows, partitioned by a 7-value column, into a new Delta table (one run):
dk (dk.write_table: dk's Parquet writer, one commit) vs delta-rs (deltalake.write_deltalake)
vs Spark + delta-spark (local[2], from a Parquet copy of the same rows; only the write job is
timed). All three get the same Arrow table (lineitem-like: 6 numeric/date columns and a
comment string) already in memory; each table is read back with delta-rs to check the row
count. Targets: dk >= 2x delta-rs, >= 5x Spark.

usage: bench/txn_p6.py [--rows N] [--no-spark]
"""
import argparse
import os
import shutil
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq


def make(n):
    """A lineitem-like table of n rows (pyarrow.compute's random numbers)."""
    def rnd(lo, hi):  # uniform doubles in [lo, hi)
        return pc.add(pc.multiply(pc.random(n), hi - lo), lo)

    def rint(lo, hi, typ=pa.int64()):
        return pc.cast(pc.floor(rnd(lo, hi)), typ)

    days = pa.array(["mon", "tue", "wed", "thu", "fri", "sat", "sun"])
    words = ["quickly", "furiously", "carefully", "blithely", "final", "ironic", "pending",
             "regular", "express", "special", "deposits", "requests"]
    pool = pa.array(["%s %s %s" % (words[i % 12], words[(i * 7) % 12], words[(i * 5 + 3) % 12])
                     + " #%d" % i for i in range(4096)])
    return pa.table({
        "l_orderkey": pc.divide(pa.array(range(n), pa.int64()), 4),
        "l_partkey": rint(1, 200_000),
        "l_quantity": pc.floor(rnd(1, 50)),
        "l_extendedprice": pc.round(rnd(900, 105_000), 2),
        "l_discount": pc.round(rnd(0, 0.1), 2),
        "l_shipdate": pc.cast(rint(8000, 10_500, pa.int32()), pa.date32()),
        "l_comment": pc.take(pool, rint(0, 4096)),
        "l_day": pc.take(days, rint(0, 7)),
    })


def count(root):
    from deltalake import DeltaTable
    return DeltaTable(root).to_pyarrow_table(columns=["l_orderkey"]).num_rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=6_000_000)
    ap.add_argument("--no-spark", action="store_true")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="dk-p6-")
    t = make(a.rows)
    res = {}
    import dk
    root = os.path.join(tmp, "dk")
    t0 = time.perf_counter()
    dk.write_table(root, t, partition_by=["l_day"])
    res["dk"] = time.perf_counter() - t0
    assert count(root) == a.rows
    from deltalake import write_deltalake
    root = os.path.join(tmp, "rs")
    t0 = time.perf_counter()
    write_deltalake(root, t, partition_by=["l_day"])
    res["delta-rs"] = time.perf_counter() - t0
    assert count(root) == a.rows
    if not a.no_spark:
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "interop"))
        from sparkenv import get_spark
        src = os.path.join(tmp, "src.parquet")
        pq.write_table(t, src)
        spark = get_spark("dk-p6")
        df = spark.read.parquet(src)
        df.count()  # the source is scanned once before timing
        root = os.path.join(tmp, "spark")
        t0 = time.perf_counter()
        df.write.format("delta").partitionBy("l_day").save(root)
        res["spark"] = time.perf_counter() - t0
        spark.stop()
        assert count(root) == a.rows
    for k, v in res.items():
        print("%-9s %7.2f s  (%.2f M rows/s)" % (k, v, a.rows / v / 1e6))
    print("P6: dk %.2fx delta-rs (target >= 2x)%s" % (
        res["delta-rs"] / res["dk"],
        ", %.2fx Spark (target >= 5x)" % (res["spark"] / res["dk"]) if "spark" in res else ""))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
