#!/usr/bin/env python3
"""P7 — commits per second: 4 concurrent writer processes doing small blind appends to one
table on local disk, dk vs delta-rs (one run; the ratio is printed).

dk:       bench_txn_append (C, bench/txn_append.c) x 4: each append writes a copy of a 1-row
          Parquet file and commits it through dk_txn (conflict check + rebase on a lost race).
delta-rs: 4 Python processes, each calling deltalake.write_deltalake(mode="append") with a
          1-row table in a loop (Parquet writing + commit, its own retries).
Afterwards each table is checked with delta-rs: versions = 1 + 4 x N, one row per reported
commit (0 lost). A delta-rs writer that gives up (its commit retries exhausted) is counted
as failed appends, reported honestly.

usage: bench/txn_p7.py [--appends N] [--build DIR]       (targets: dk >= 200 commits/s, >= 3x delta-rs)
"""
import argparse
import json
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import time


def rs_writer(root, w, n, q):
    import pyarrow as pa
    from deltalake import write_deltalake
    ok = fail = 0
    err = None
    t0 = time.perf_counter()
    for i in range(n):
        try:
            write_deltalake(root, pa.table({"w": pa.array([w], pa.int64()),
                                            "i": pa.array([i], pa.int64())}), mode="append")
            ok += 1
        except Exception as e:  # noqa: BLE001 - delta-rs raises CommitFailedError etc.
            fail += 1
            err = "%s: %s" % (type(e).__name__, str(e)[:200])
    q.put({"ok": ok, "fail": fail, "seconds": time.perf_counter() - t0, "error": err})


def run_dk(build, root, n, writers):
    import pyarrow as pa
    import pyarrow.parquet as pq
    import dk
    dk.Table.create(root, "w long, i long")
    tmpl = os.path.join(os.path.dirname(root), "tmpl.parquet")
    pq.write_table(pa.table({"w": pa.array([0], pa.int64()), "i": pa.array([0], pa.int64())}),
                   tmpl, compression="snappy")
    exe = os.path.join(build, "bench_txn_append")
    t0 = time.perf_counter()
    ps = [subprocess.Popen([exe, root, str(w), str(n), tmpl], stdout=subprocess.PIPE, text=True)
          for w in range(writers)]
    outs = [p.communicate()[0] for p in ps]
    wall = time.perf_counter() - t0
    if any(p.returncode for p in ps):
        raise SystemExit("dk writer failed")
    res = [json.loads(o) for o in outs]
    return wall, sum(r["commits"] for r in res), sum(r["attempts"] for r in res), 0


def run_rs(root, n, writers):
    import pyarrow as pa
    from deltalake import write_deltalake
    write_deltalake(root, pa.table({"w": pa.array([], pa.int64()), "i": pa.array([], pa.int64())}))
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    ps = [ctx.Process(target=rs_writer, args=(root, w, n, q)) for w in range(writers)]
    t0 = time.perf_counter()
    for p in ps:
        p.start()
    res = [q.get() for _ in ps]
    wall = time.perf_counter() - t0
    for p in ps:
        p.join()
    errs = [r["error"] for r in res if r["error"]]
    return wall, sum(r["ok"] for r in res), None, sum(r["fail"] for r in res), errs


def check(root, commits):
    from deltalake import DeltaTable
    dt = DeltaTable(root)
    rows = dt.to_pyarrow_table().num_rows
    return dt.version(), rows, rows == commits and dt.version() == commits


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--appends", type=int, default=100, help="appends per writer")
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument("--build", default="build")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="dk-p7-")
    dk_root, rs_root = os.path.join(tmp, "dk"), os.path.join(tmp, "rs")
    wall, commits, attempts, _ = run_dk(a.build, dk_root, a.appends, a.writers)
    v, rows, ok = check(dk_root, commits)
    dk_rate = commits / wall
    print("dk:       %d commits in %.2f s = %.0f commits/s (%d attempts; table version %d, %d rows, "
          "%s)" % (commits, wall, dk_rate, attempts, v, rows, "0 lost" if ok else "MISMATCH"))
    wall2, ok2, _, fails, errs = run_rs(rs_root, a.appends, a.writers)
    v2, rows2, good2 = check(rs_root, ok2)
    rs_rate = ok2 / wall2
    print("delta-rs: %d commits in %.2f s = %.0f commits/s (%d appends failed; table version %d, "
          "%d rows, %s)%s" % (ok2, wall2, rs_rate, fails, v2, rows2, "0 lost" if good2 else
                              "MISMATCH", ("\n          first error: " + errs[0]) if errs else ""))
    print("P7: dk %.0f commits/s (target >= 200), %.2fx delta-rs (target >= 3x)" %
          (dk_rate, dk_rate / rs_rate if rs_rate else float("inf")))


if __name__ == "__main__":
    sys.exit(main())
