#!/usr/bin/env python3
"""P8 — a checkpoint of the 1M-file table of P1: dk vs delta-rs create_checkpoint (one run of
this script; medians and the ratio printed).

Input: P1's synthetic table (bench/snapshot_load.py make_table, cached in
bench/cache/snapshot-1m-seed3, generated once): 1,000,000 live files at version 200 — a
classic checkpoint at v100 (950,005 rows, 130 MiB, Spark-style JSON stats) plus 100 JSON
commits of +1000/-500 files — and 50,000 old tombstones (expired: not carried over).

Each timed run is a fresh process that opens the table, loads the latest snapshot and writes
a classic checkpoint of v200 plus _last_checkpoint; the time is the operation's (imports
excluded), peak RSS and process CPU time (user + system, imports included) from wait4 — on
this shared machine the CPU time says more than the wall time. Every run works on its own copy of the log (hard links to the
cached files, _last_checkpoint copied), so the input stays as generated.

  dk:       dk.Table(root).checkpoint()              (libdk's classic checkpoint writer)
  delta-rs: deltalake.DeltaTable(root).create_checkpoint()
  Spark:    not run: DeltaLog.checkpoint() of 1M files needs a multi-GB driver and minutes per
            run on this shared 2-core machine.

Checked once per system (untimed): the checkpoint has every live file — dk and delta-rs each
read the other's checkpoint alone (the JSON commits before it hidden) and find 1,000,000 files.

usage: bench/txn_p8.py [--repeats N]        (target: dk >= 5x delta-rs)
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, BENCH)

CKPT = "%020d.checkpoint.parquet" % 200

DK_CODE = """
import json, sys, time
import dk
t0 = time.perf_counter()
r = dk.Table(sys.argv[1]).checkpoint()
print(json.dumps({"seconds": time.perf_counter() - t0, "actions": r["num_actions"]}))
"""

RS_CODE = """
import json, sys, time
from deltalake import DeltaTable
t0 = time.perf_counter()
DeltaTable(sys.argv[1]).create_checkpoint()
print(json.dumps({"seconds": time.perf_counter() - t0}))
"""


def work_copy(src, dst):
    """dst/_delta_log: hard links to src's log files (the writers create new files, never write
    into existing ones), _last_checkpoint copied."""
    log = os.path.join(dst, "_delta_log")
    os.makedirs(log)
    for name in os.listdir(os.path.join(src, "_delta_log")):
        s = os.path.join(src, "_delta_log", name)
        if name == "_last_checkpoint":
            shutil.copyfile(s, os.path.join(log, name))
        else:
            os.link(s, os.path.join(log, name))


def run(code, root):
    p = subprocess.Popen([sys.executable, "-c", code, root], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    out = p.stdout.read()
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        raise SystemExit("run failed (%d): %s" % (p.returncode, err.decode()[-2000:]))
    r = json.loads(out.decode().strip().splitlines()[-1])
    r["rss_mib"] = ru.ru_maxrss / 1024
    r["cpu"] = ru.ru_utime + ru.ru_stime  # the whole process (imports too)
    return r


def hide_commits(root):
    """Leaves the v200 checkpoint alone in the log (as if the commits were cleaned up)."""
    log = os.path.join(root, "_delta_log")
    for name in os.listdir(log):
        if name.endswith(".json") or (name.endswith(".checkpoint.parquet") and name != CKPT):
            os.remove(os.path.join(log, name))


def check(root, live):
    import dk
    from deltalake import DeltaTable
    hide_commits(root)
    n_dk = dk.Table(root).snapshot().num_files
    n_rs = len(DeltaTable(root).file_uris())
    return n_dk == live and n_rs == live, n_dk, n_rs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    import snapshot_load
    t0 = time.perf_counter()
    src, facts = snapshot_load.ensure_table("1m")
    print("input: %s: %d live files at v%d (ready in %.0f s)" %
          (src, facts["live_files"], facts["version"], time.perf_counter() - t0), flush=True)
    tmp = tempfile.mkdtemp(prefix="dk-p8-")
    res = {}
    try:
        for name, code in (("dk", DK_CODE), ("delta-rs", RS_CODE)):
            times, rss, cpu = [], [], []
            for i in range(a.repeats):
                root = os.path.join(tmp, "%s-%d" % (name, i))
                work_copy(str(src), root)
                r = run(code, root)
                times.append(r["seconds"])
                rss.append(r["rss_mib"])
                cpu.append(r["cpu"])
                print("  %-8s run %d: %.2f s (process CPU %.2f s), peak RSS %.0f MiB" %
                      (name, i + 1, r["seconds"], r["cpu"], r["rss_mib"]), flush=True)
                if i == 0:
                    ok, n_dk, n_rs = check(root, facts["live_files"])
                    print("  %-8s checkpoint read alone: dk %d files, delta-rs %d files (%s)" %
                          (name, n_dk, n_rs, "ok" if ok else "MISMATCH"), flush=True)
                    if not ok:
                        raise SystemExit("checkpoint check failed")
                shutil.rmtree(root)
            res[name] = (statistics.median(times), min(times), max(times),
                         statistics.median(rss), statistics.median(cpu))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for name, (med, lo, hi, rss, cpu) in res.items():
        print("%-8s median %.2f s (min %.2f, max %.2f), process CPU %.2f s, peak RSS %.0f MiB" %
              (name, med, lo, hi, cpu, rss))
    ratio = res["delta-rs"][0] / res["dk"][0]
    print("P8: checkpoint of 1M files: dk %.2f s, delta-rs %.2f s: dk is %.2fx delta-rs "
          "(target >= 5x); CPU time %.2fx" % (res["dk"][0], res["delta-rs"][0], ratio,
                                              res["delta-rs"][4] / res["dk"][4]))


if __name__ == "__main__":
    sys.exit(main())
