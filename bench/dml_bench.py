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

P10 MERGE 60,000 source rows, half of them matching, into the same table (an upsert on the
    lineitem key): ON t.l_orderkey = s.l_orderkey AND t.l_linenumber = s.l_linenumber
    WHEN MATCHED THEN UPDATE SET l_quantity = s.l_quantity, l_comment = s.l_comment
    WHEN NOT MATCHED THEN INSERT *. The 30,000 matching rows are copies of table rows with
    l_quantity 99.00 (a value the data never has); the 30,000 others are copies with
    l_linenumber + 10 (new keys). Variants:
      scattered  the copied rows sampled over the whole table (every file touched)
      clustered  consecutive rows of the P3 l_orderkey range (2 files touched; the source's
                 key range prunes the rest)
    dk on the DV copy (DVs for the matched rows, one new file), Spark on the DV copy, delta-rs
    on the plain table (copy-on-write). Target: dk >= 3x delta-rs. Checked: delta-rs reads
    6,030,000 rows back, 30,000 with l_quantity 99.00 and 30,000 with l_linenumber > 7.

Each dk / delta-rs run is a fresh Python process timing the call alone (table load included);
every run starts from a fresh copy (data files hard-linked, _delta_log copied) and is checked:
the number of deleted rows equals pyarrow.compute's count on the source file, and delta-rs
(DataFusion, which applies DVs) reads back the rest.

usage: bench/dml_bench.py [p9] [p10] [--repeats N] [--build DIR] [--systems dk,delta-rs,spark]
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


MERGE_ON = "t.l_orderkey = s.l_orderkey AND t.l_linenumber = s.l_linenumber"
MERGE_SET = {"l_quantity": "s.l_quantity", "l_comment": "s.l_comment"}
P10_HALF = 30_000


def merge_source(variant: str, out: Path) -> Path:
    """The P10 source (Parquet, the table's schema): P10_HALF matching rows with l_quantity
    99.00, then P10_HALF rows with new keys (l_linenumber + 10)."""
    import decimal
    import random
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    import scan_p2p3
    from run import CACHE
    path = out / ("p10-%s.parquet" % variant)
    if path.exists():
        return path
    t = pq.read_table(scan_p2p3._source(CACHE))
    if variant == "scattered":
        idx = sorted(random.Random(20261202).sample(range(t.num_rows), 2 * P10_HALF))
        idx = random.Random(7).sample(idx, len(idx))  # matching and new rows both scattered
    else:
        key = t["l_orderkey"]
        first = pc.index(pc.greater_equal(key, scan_p2p3.P3_LO), True).as_py()
        idx = list(range(first, first + 2 * P10_HALF))
    rows = t.take(pa.array(idx))
    hit, new = rows.slice(0, P10_HALF), rows.slice(P10_HALF)
    q = pa.array([decimal.Decimal("99.00")] * P10_HALF, t.schema.field("l_quantity").type)
    hit = hit.set_column(hit.schema.get_field_index("l_quantity"), "l_quantity", q)
    ln = pc.add(new["l_linenumber"], pa.scalar(10, pa.int32())).cast(pa.int32())
    new = new.set_column(new.schema.get_field_index("l_linenumber"), "l_linenumber", ln)
    pq.write_table(pa.concat_tables([hit, new]), path)
    return path


def merge_check(root: Path) -> tuple[bool, str]:
    from deltalake import DeltaTable, QueryBuilder
    import pyarrow as pa
    import scan_p2p3
    r = pa.table(QueryBuilder().register("t", DeltaTable(str(root))).execute(
        "SELECT count(*) AS n, sum(CASE WHEN l_quantity = 99.00 THEN 1 ELSE 0 END) AS q, "
        "sum(CASE WHEN l_linenumber > 7 THEN 1 ELSE 0 END) AS k FROM t").read_all()).to_pylist()[0]
    ok = r["n"] == scan_p2p3.ROWS + P10_HALF and r["q"] == P10_HALF and r["k"] == P10_HALF
    return ok, "%d rows, %d updated, %d inserted" % (r["n"], r["q"], r["k"])


# ---- workers (fresh processes) -----------------------------------------------------------------

def w_dk(pydk: str, root: str, pred: str) -> None:
    sys.path.insert(0, pydk)
    import dk
    assert dk.BUILD_DIR and not dk.SANITIZE, "dk module is not the benchmark build"
    t0 = time.perf_counter()
    m = dk.Table(root).delete(pred)
    secs = time.perf_counter() - t0
    print(json.dumps({"seconds": secs, "deleted": m["num_deleted_rows"]}))


def w_dk_merge(pydk: str, root: str, source: str) -> None:
    sys.path.insert(0, pydk)
    import dk
    import pyarrow.parquet as pq
    assert dk.BUILD_DIR and not dk.SANITIZE, "dk module is not the benchmark build"
    src = pq.read_table(source)
    c0, t0 = time.process_time(), time.perf_counter()
    m = (dk.Table(root).merge(src, on=MERGE_ON, source_alias="s", target_alias="t")
         .when_matched_update(MERGE_SET).when_not_matched_insert_all().execute())
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(json.dumps({"seconds": secs, "cpu": cpu, "updated": m["num_updated_rows"],
                      "inserted": m["num_inserted_rows"],
                      "files_read": m["num_files_after_skipping"]}))


def w_deltars_merge(root: str, source: str) -> None:
    from deltalake import DeltaTable
    import pyarrow.parquet as pq
    src = pq.read_table(source)
    c0, t0 = time.process_time(), time.perf_counter()
    m = (DeltaTable(root).merge(src, predicate=MERGE_ON, source_alias="s", target_alias="t")
         .when_matched_update(MERGE_SET).when_not_matched_insert_all().execute())
    secs, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(json.dumps({"seconds": secs, "cpu": cpu, "updated": m.get("num_target_rows_updated"),
                      "inserted": m.get("num_target_rows_inserted")}))


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
    if op == "merge":  # args = source parquet, warm-up root, timed roots...
        spark.read.parquet(args[0]).createOrReplaceTempView("p10_source")
        sql = ("MERGE INTO delta.`%%s` t USING p10_source s ON %s WHEN MATCHED THEN UPDATE SET "
               "%s WHEN NOT MATCHED THEN INSERT *" %
               (MERGE_ON, ", ".join("%s = %s" % kv for kv in MERGE_SET.items())))
        spark.sql(sql % args[1])
        out = []
        for r in args[2:]:
            t0 = time.perf_counter()
            res = spark.sql(sql % r).collect()[0].asDict()
            out.append({"seconds": time.perf_counter() - t0,
                        "updated": res.get("num_updated_rows"),
                        "inserted": res.get("num_inserted_rows")})
        print(json.dumps(out))
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


# ---- running a system --------------------------------------------------------------------------

def timed_runs(tmp: Path, tag: str, system: str, base: Path, repeats: int, spark_args: list[str],
               argv) -> tuple[list[Path], list[dict], list[dict]]:
    """`repeats` fresh copies of base, each changed once by `system`: Spark in one warm session
    (spark_worker with spark_args + a warm-up copy + the copies), dk / delta-rs in a fresh
    process each (argv(root)). Returns the copies, their files before, and the workers' answers."""
    roots = [tmp / ("%s-%s-%d" % (tag, system, i)) for i in range(repeats)]
    for r in roots:
        fresh_copy(base, r)
    befores = [snapshot_files(r) for r in roots]
    if system != "spark":
        return roots, befores, [run_worker(argv(r)) for r in roots]
    warm = tmp / ("%s-spark-warm" % tag)
    fresh_copy(base, warm)
    got = spark_worker(spark_args + [str(warm)] + [str(r) for r in roots])
    shutil.rmtree(warm)
    return roots, befores, got


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
            roots, befores, got = timed_runs(
                tmp, variant, system, base, args.repeats, ["delete", pred],
                lambda r: ([sys.executable, __file__, "_dk", str(pydk), str(r), pred]
                           if system == "dk" else
                           [sys.executable, __file__, "_deltars", str(r), pred]))
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


def p10(args, tmp: Path) -> list[str]:
    import scan_p2p3
    plain, dv = base_tables()
    pydk, why = scan_p2p3.ensure_pydk(Path(args.build))
    if pydk is None:
        raise SystemExit("dk Python module: " + why)
    from run import CACHE
    report = []
    for variant in ("scattered", "clustered"):
        source = merge_source(variant, CACHE)
        res = {}
        for system in args.systems.split(","):
            base = plain if system == "delta-rs" else dv
            roots, befores, got = timed_runs(
                tmp, "p10-" + variant, system, base, args.repeats, ["merge", str(source)],
                lambda r: ([sys.executable, __file__, "_dk_merge", str(pydk), str(r), str(source)]
                           if system == "dk" else
                           [sys.executable, __file__, "_deltars_merge", str(r), str(source)]))
            runs = []
            for r, b, g in zip(roots, befores, got):
                data, log = bytes_written(b, r)
                ok, what = merge_check(r)
                runs.append(dict(g, data_bytes=data, log_bytes=log, ok=ok, what=what))
                shutil.rmtree(r)
            res[system] = runs
            med = statistics.median(x["seconds"] for x in runs)
            cpu = ("  cpu median %.3f s" % statistics.median(x["cpu"] for x in runs)
                   if all("cpu" in x for x in runs) else "")
            print("P10 %-9s %-8s median %7.3f s over %d run(s)%s  %s%s  written %d data/DV + %d "
                  "log bytes  %s" %
                  (variant, system, med, len(runs), cpu, runs[0]["what"],
                   ("  (%d files read)" % runs[0]["files_read"]) if "files_read" in runs[0] else "",
                   runs[0]["data_bytes"], runs[0]["log_bytes"],
                   "ok" if all(x["ok"] for x in runs) else "**WRONG RESULT**"), flush=True)
        dkm = statistics.median(x["seconds"] for x in res["dk"]) if "dk" in res else None
        line = "P10 %s (MERGE %d source rows, %d matching):" % (variant, 2 * P10_HALF, P10_HALF)
        for other, target in (("delta-rs", 3), ("spark", None)):
            if dkm and other in res:
                q = statistics.median(x["seconds"] for x in res[other]) / dkm
                line += "  dk %.2fx %s" % (q, other)
                if target:
                    line += " (target >= %dx: %s)" % (target, "met" if q >= target else "missed")
                if all("cpu" in x for x in res["dk"] + res[other]):
                    line += " (cpu %.2fx)" % (statistics.median(x["cpu"] for x in res[other]) /
                                              statistics.median(x["cpu"] for x in res["dk"]))
        print(line, flush=True)
        report.append(line)
    return report


def main():
    if len(sys.argv) > 1 and sys.argv[1].startswith("_"):
        op, rest = sys.argv[1], sys.argv[2:]
        {"_dk": w_dk, "_deltars": w_deltars, "_spark": w_spark, "_dk_merge": w_dk_merge,
         "_deltars_merge": w_deltars_merge}[op](*rest)
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("which", nargs="*", default=["p9"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--build", default=str(REPO / "build"))
    ap.add_argument("--systems", default="dk,delta-rs,spark")
    args = ap.parse_args()
    (BENCH / "cache").mkdir(exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="dk-dml-bench-", dir=str(BENCH / "cache")))
    try:
        lines = []
        if "p9" in args.which:
            lines += p9(args, tmp)
        if "p10" in args.which:
            lines += p10(args, tmp)
        print("\n".join(["", "summary:"] + lines))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
