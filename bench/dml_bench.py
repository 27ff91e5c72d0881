#!/usr/bin/env python3
"""P9 / P10 — row-level DML on the 6M-row lineitem-like table (bench/scan_p2p3.py's: 100 files of
60,000 rows clustered on l_orderkey, written by delta-rs), dk vs delta-rs vs Spark + delta-spark,
in one run with the ratios printed (issue #15).

P9  DELETE 1% of the rows by a data predicate:
      scattered  l_suppkey <= 100        (about 1% of the rows of every file: all 100 files touched)
      clustered  an l_orderkey range     (1% of the rows in 2 files, the P3 range)
    dk:       dk.Table(root).delete(pred) on a copy with deletion vectors enabled (DV files)
    Spark:    DELETE FROM ... WHERE pred with deletion vectors enabled (delta-spark 4.4, local[2],
              one warm SparkSession: its start-up is not counted; a warm-up DELETE runs first)
    delta-rs: DeltaTable(root).delete(pred) on the same table without DVs (it cannot write them:
              copy-on-write of every touched file)
    Targets: dk >= 10x delta-rs and >= 3x Spark. Bytes written (new data/DV files + commit) are
    reported for each.

Each dk / delta-rs run is a fresh Python process timing the call alone (table load included);
every run starts from a fresh copy (data files hard-linked, _delta_log copied) and is checked:
the number of deleted rows equals pyarrow.compute's count on the source file, and delta-rs
(DataFusion, which applies DVs) reads back the rest.

usage: bench/dml_bench.py [p9] [--repeats N] [--build DIR] [--systems dk,delta-rs,spark]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))

P9 = {"scattered": "l_suppkey <= 100",
      "clustered": "l_orderkey >= 6060001 AND l_orderkey < 6180001"}


# ---- inputs ------------------------------------------------------------------------------------

def base_tables():
    """(plain, dv): the delta-rs table, and a copy with deletion vectors enabled by Spark."""
    import scan_p2p3
    plain, _ = scan_p2p3.ensure_table()
    dv = plain.with_name(plain.name + "-dv")
    if not (dv / "DONE").exists():
        shutil.rmtree(dv, ignore_errors=True)
        fresh_copy(plain, dv)
        spark_worker(["enable_dv", str(dv)])
        (dv / "DONE").write_text("")
    return plain, dv


def fresh_copy(src: Path, dst: Path) -> None:
    """Data files hard-linked (DML never rewrites a file in place), the log copied."""
    dst.mkdir(parents=True)
    for p in src.iterdir():
        if p.name == "_delta_log":
            shutil.copytree(p, dst / p.name)
        elif p.name != "DONE":
            os.link(p, dst / p.name)


def snapshot_files(root: Path) -> dict:
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = Path(d) / n
            out[str(p.relative_to(root))] = p.stat().st_size
    return out


def bytes_written(before: dict, root: Path) -> tuple[int, int]:
    after = snapshot_files(root)
    new = {k: v for k, v in after.items() if k not in before}
    data = sum(v for k, v in new.items() if not k.startswith("_delta_log"))
    log = sum(v for k, v in new.items() if k.startswith("_delta_log"))
    return data, log


def expected_deleted(pred: str) -> int:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    import scan_p2p3
    from run import CACHE
    src = scan_p2p3._source(CACHE)
    t = pq.read_table(src, columns=["l_orderkey", "l_suppkey"])
    if pred.startswith("l_suppkey"):
        m = pc.less_equal(t["l_suppkey"], 100)
    else:
        m = pc.and_(pc.greater_equal(t["l_orderkey"], 6060001), pc.less(t["l_orderkey"], 6180001))
    return pc.sum(m).as_py()


def rows_left(root: Path) -> int:
    from deltalake import DeltaTable, QueryBuilder
    import pyarrow as pa
    r = QueryBuilder().register("t", DeltaTable(str(root))).execute("SELECT count(*) AS n FROM t")
    return pa.table(r.read_all())["n"][0].as_py()


# ---- workers (fresh processes) -----------------------------------------------------------------

def w_dk(pydk: str, root: str, pred: str) -> None:
    sys.path.insert(0, pydk)
    import dk
    assert dk.BUILD_DIR and not dk.SANITIZE, "dk module is not the benchmark build"
    t0 = time.perf_counter()
    m = dk.Table(root).delete(pred)
    secs = time.perf_counter() - t0
    print(json.dumps({"seconds": secs, "deleted": m["num_deleted_rows"]}))


def w_deltars(root: str, pred: str) -> None:
    from deltalake import DeltaTable
    t0 = time.perf_counter()
    m = DeltaTable(root).delete(pred)
    secs = time.perf_counter() - t0
    print(json.dumps({"seconds": secs, "deleted": m.get("num_deleted_rows")}))


def w_spark(op: str, *args: str) -> None:
    sys.path.insert(0, str(REPO / "tests" / "interop"))
    from sparkenv import get_spark
    spark = get_spark("dk-bench-dml")
    if op == "enable_dv":
        spark.sql("ALTER TABLE delta.`%s` SET TBLPROPERTIES ('delta.enableDeletionVectors' = "
                  "'true')" % args[0])
        return
    # delete: args = pred, warm-up root, timed roots...
    pred, warm, roots = args[0], args[1], args[2:]
    spark.sql("DELETE FROM delta.`%s` WHERE %s" % (warm, pred))
    out = []
    for r in roots:
        t0 = time.perf_counter()
        res = spark.sql("DELETE FROM delta.`%s` WHERE %s" % (r, pred)).collect()
        out.append({"seconds": time.perf_counter() - t0, "deleted": res[0][0]})
    print(json.dumps(out))


def spark_worker(args: list[str]) -> list:
    p = subprocess.run([sys.executable, __file__, "_spark", *args], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit("Spark worker failed:\n" + p.stderr[-3000:])
    lines = [x for x in p.stdout.strip().splitlines() if x.startswith("[")]
    return json.loads(lines[-1]) if lines else []


def run_worker(argv: list[str]) -> dict:
    p = subprocess.run(argv, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit("worker %s failed:\n%s" % (argv[2:4], p.stderr[-3000:]))
    return json.loads(p.stdout.strip().splitlines()[-1])


# ---- P9 ----------------------------------------------------------------------------------------

def p9(args, tmp: Path) -> list[str]:
    import scan_p2p3
    plain, dv = base_tables()
    pydk, why = scan_p2p3.ensure_pydk(Path(args.build))
    if pydk is None:
        raise SystemExit("dk Python module: " + why)
    systems = args.systems.split(",")
    report = []
    for variant, pred in P9.items():
        want = expected_deleted(pred)
        res = {}
        for system in systems:
            base = plain if system == "delta-rs" else dv
            runs = []
            roots = [tmp / ("%s-%s-%d" % (variant, system, i)) for i in range(args.repeats)]
            for r in roots:
                fresh_copy(base, r)
            befores = [snapshot_files(r) for r in roots]
            if system == "spark":
                warm = tmp / ("%s-spark-warm" % variant)
                fresh_copy(base, warm)
                got = spark_worker(["delete", pred, str(warm)] + [str(r) for r in roots])
                shutil.rmtree(warm)
            else:
                got = []
                for r in roots:
                    if system == "dk":
                        argv = [sys.executable, __file__, "_dk", str(pydk), str(r), pred]
                    else:
                        argv = [sys.executable, __file__, "_deltars", str(r), pred]
                    got.append(run_worker(argv))
            for r, b, g in zip(roots, befores, got):
                data, log = bytes_written(b, r)
                left = rows_left(r)
                ok = g["deleted"] == want and left == scan_p2p3.ROWS - want
                runs.append(dict(g, data_bytes=data, log_bytes=log, ok=ok, left=left))
                shutil.rmtree(r)
            res[system] = runs
            med = statistics.median(x["seconds"] for x in runs)
            print("P9 %-9s %-8s median %7.3f s over %d run(s)  deleted %s (want %d)  written "
                  "%d data/DV + %d log bytes  %s" %
                  (variant, system, med, len(runs), runs[0]["deleted"], want,
                   runs[0]["data_bytes"], runs[0]["log_bytes"],
                   "ok" if all(x["ok"] for x in runs) else "**WRONG RESULT**"), flush=True)
        dkm = statistics.median(x["seconds"] for x in res.get("dk", [])) if "dk" in res else None
        line = "P9 %s (%s, %d rows):" % (variant, pred, want)
        for other, target in (("delta-rs", 10), ("spark", 3)):
            if dkm and other in res:
                q = statistics.median(x["seconds"] for x in res[other]) / dkm
                line += "  dk %.2fx %s (target >= %dx: %s)" % (q, other, target,
                                                                "met" if q >= target else "missed")
        print(line, flush=True)
        report.append(line)
    return report


def main():
    if len(sys.argv) > 1 and sys.argv[1].startswith("_"):
        op, rest = sys.argv[1], sys.argv[2:]
        {"_dk": w_dk, "_deltars": w_deltars, "_spark": w_spark}[op](*rest)
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("which", nargs="*", default=["p9"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--build", default=str(REPO / "build"))
    ap.add_argument("--systems", default="dk,delta-rs,spark")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="dk-dml-bench-", dir=str(BENCH / "cache")))
    try:
        lines = []
        if "p9" in args.which:
            lines += p9(args, tmp)
        print("\n".join(["", "summary:"] + lines))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
