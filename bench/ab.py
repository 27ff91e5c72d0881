#!/usr/bin/env python3
"""bench/ab.py — A/B of two dk builds on the dk rows of P0 (parquet_decode) and P2/P3
(scan_p2p3), in one run: each repeat runs every variant on build A and then on build B (the
order alternating between repeats), each in a fresh process, so both see the same machine
load. Prints median wall and CPU seconds per build and the ratio B / A (> 1.00 = B slower).
With --instructions it instead counts the instructions each 1-thread variant executes under
valgrind (cachegrind without cache simulation), once per build: slow, but the same on a busy
machine as on an idle one, which timings on a shared 2-core box are not.

usage: bench/ab.py --a BUILD_A --b BUILD_B [--repeats 9] [--only p0,p1,p2,p3,p1r] [--instructions]
  e.g. git archive main | tar -x -C /tmp/dk-main && cmake ... && bench/ab.py --a /tmp/dk-main/build --b build

Inputs are the cached ones of bench/parquet_decode.py and bench/scan_p2p3.py (generated when
absent), and bench/snapshot_load.py's (P1: load the 10k- and 100k-file tables and list every
file). Variants: P0 decode with 1 and 2 threads (pread) and 1 thread mmap, P0
decompress-only; P2 full and P3 1% with 1 and 2 threads; p1r (not in the default set): 20
plans of a 1%-selective scan on one snapshot of the 100k-file P1 table
(bench/snapshot_load.py), nothing read: the per-scan cost of statistics skipping.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))


def variants(only: set[str]) -> list[tuple[str, str, list[str]]]:
    """(name, driver, args) for each variant."""
    out = []
    if "p0" in only:
        import parquet_decode
        from run import CACHE
        CACHE.mkdir(parents=True, exist_ok=True)
        path = CACHE / f"lineitem-{parquet_decode.ROWS // 1_000_000}m-seed{parquet_decode.SEED}.parquet"
        if not path.exists():
            parquet_decode.make_lineitem(path)
        for n in (1, 2):
            out.append((f"P0 decode t{n}", "bench_parquet_decode", [str(path), "--threads", str(n)]))
        out.append(("P0 decode t1 mmap", "bench_parquet_decode", [str(path), "--threads", "1", "--mmap"]))
        out.append(("P0 decompress-only", "bench_parquet_decode", [str(path), "--decompress-only"]))
    if "p1" in only:
        import snapshot_load
        for label in ("10k", "100k"):
            root, _ = snapshot_load.ensure_table(label)
            out.append((f"P1 snapshot {label}", "bench_snapshot_load", [str(root)]))
    if only & {"p2", "p3"}:
        import scan_p2p3
        root, _ = scan_p2p3.ensure_table()
        for variant, pred in scan_p2p3.VARIANTS.items():
            key = "p2" if pred is None else "p3"
            if key not in only:
                continue
            for n in (1, 2):
                args = [str(root), "--threads", str(n)] + (["--filter", pred] if pred else [])
                out.append((f"{variant} t{n}", "bench_scan_p2p3", args))
    if "p1r" in only:
        import snapshot_load
        root, _ = snapshot_load.ensure_table("100k")
        out.append((f"P1r 100k x{P1R_SCANS} 1% plans", "bench_scan_p2p3",
                    [str(root), "--repeat", str(P1R_SCANS), "--filter", P1R_FILTER]))
    return out


# ids grow by 50k..2M rows a file: this range meets 955 of the 100k files (1%)
P1R_FILTER = "id >= 51250000000 AND id < 52275000000"
P1R_SCANS = 20


def run_once(build: Path, drv: str, args: list[str]) -> tuple[float, float]:
    p = subprocess.run([str(build / drv), *args], capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise SystemExit(f"{build / drv} {' '.join(args)} failed: {p.stderr.strip()[-400:]}")
    d = json.loads(p.stdout.strip().splitlines()[-1])
    return d["seconds"], d.get("cpu_seconds", d["seconds"])


def instructions_once(build: Path, drv: str, args: list[str]) -> int:
    """Instructions the process executes (valgrind's cachegrind, no cache simulation): a count
    that does not depend on the machine's load, for single-threaded variants."""
    p = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                        "--cachegrind-out-file=/dev/null", str(build / drv), *args],
                       capture_output=True, text=True, timeout=3600)
    if p.returncode != 0:
        raise SystemExit(f"valgrind {build / drv} {' '.join(args)} failed: {p.stderr.strip()[-400:]}")
    for line in p.stderr.splitlines():
        if "I" in line and "refs:" in line:
            return int(line.split("refs:")[1].strip().replace(",", ""))
    raise SystemExit(f"valgrind printed no instruction count for {drv}")


def main_instructions(o, vs) -> None:
    vs = [v for v in vs if " t2" not in v[0]]
    print(f"A = {o.a}\nB = {o.b}\ninstructions executed (valgrind cachegrind), 1-thread variants\n")
    print("| variant | A instructions | B instructions | B/A |")
    print("|---|---|---|---|")
    for name, drv, args in vs:
        a = instructions_once(o.a, drv, args)
        b = instructions_once(o.b, drv, args)
        print(f"| {name} | {a:,} | {b:,} | {b / a:.3f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, type=Path, help="build directory A (baseline)")
    ap.add_argument("--b", required=True, type=Path, help="build directory B (candidate)")
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--only", default="p0,p1,p2,p3")
    ap.add_argument("--instructions", action="store_true",
                    help="count instructions under valgrind instead of timing (load-independent)")
    o = ap.parse_args()
    vs = variants(set(o.only.split(",")))
    if o.instructions:
        main_instructions(o, vs)
        return
    res = {(name, which): [] for name, _, _ in vs for which in "ab"}
    for name, drv, args in vs:  # warm the page cache and both binaries
        run_once(o.a, drv, args)
        run_once(o.b, drv, args)
    for r in range(o.repeats):
        for name, drv, args in vs:
            order = ("a", "b") if r % 2 == 0 else ("b", "a")
            for which in order:
                res[(name, which)].append(run_once(o.a if which == "a" else o.b, drv, args))
        print(f"  repeat {r + 1}/{o.repeats} done", file=sys.stderr, flush=True)
    print(f"A = {o.a}\nB = {o.b}\n{o.repeats} repeats, medians\n")
    print(f"| variant | A wall s | B wall s | B/A wall | A cpu s | B cpu s | B/A cpu |")
    print(f"|---|---|---|---|---|---|---|")
    for name, _, _ in vs:
        aw = statistics.median(x[0] for x in res[(name, "a")])
        bw = statistics.median(x[0] for x in res[(name, "b")])
        ac = statistics.median(x[1] for x in res[(name, "a")])
        bc = statistics.median(x[1] for x in res[(name, "b")])
        print(f"| {name} | {aw:.4f} | {bw:.4f} | {bw / aw:.3f} | {ac:.4f} | {bc:.4f} | {bc / ac:.3f} |")


if __name__ == "__main__":
    main()
