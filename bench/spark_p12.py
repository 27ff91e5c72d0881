"""Benchmark P12 (INSERT part): 6M rows into a partitioned table, written through the dk
connector (format "dk": executors write Parquet through libdk) and through delta-spark
(format "delta") in ONE SparkSession, from the same cached source DataFrame.

Each run writes a fresh table per engine, alternating engines (warm-up run first, not timed);
the report is the per-engine median and best times and the ratio delta/dk of the medians
(> 1 = dk faster; target >= 1.5x). The two tables of the last run are checked to hold the same
rows (count and column sums through delta-spark). Results go to bench/results/spark_p12-<date>.

  .venv/bin/python bench/spark_p12.py [--rows 6000000] [--runs 3] [--out build/bench-p12]
      [--no-cluster]   dk without the clustered distribution (no shuffle by partition)
"""
import argparse
import datetime
import glob
import json
import os
import shutil
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "interop"))
sys.path.insert(0, HERE)

from spark_p4 import session  # noqa: E402


def source(spark, n):
    """A lineitem-like frame: 12 columns, partitioned by a 7-valued year column."""
    return spark.range(0, n, 1, 4).selectExpr(
        "id AS l_orderkey",
        "cast(id % 200000 AS int) AS l_partkey",
        "cast(id % 7 AS int) + 1 AS l_linenumber",
        "cast((id * 7) % 50 + 1 AS decimal(12,2)) AS l_quantity",
        "cast((id * 13) % 100000 AS decimal(12,2)) / 10 AS l_extendedprice",
        "((id * 17) % 11) / 100.0D AS l_discount",
        "element_at(array('A', 'N', 'R'), cast(id % 3 AS int) + 1) AS l_returnflag",
        "element_at(array('MAIL', 'SHIP', 'AIR', 'RAIL', 'TRUCK'), cast(id % 5 AS int) + 1) AS l_shipmode",
        "date_add(DATE'1992-01-01', cast(id % 2500 AS int)) AS l_shipdate",
        "concat('comment ', cast(id % 99991 AS string)) AS l_comment",
        "id % 2 = 0 AS l_flag",
        "1992 + cast(id % 7 AS int) AS l_year",
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=6_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(REPO, "build", "bench-p12"))
    ap.add_argument("--no-cluster", action="store_true")
    a = ap.parse_args()
    jar = os.environ.get("DK_SPARK_JAR") or sorted(
        j for j in glob.glob(os.path.join(REPO, "connectors", "spark", "target", "dk-spark_2.13-*.jar"))
        if "original-" not in j)[-1]
    spark = session(jar)
    src = source(spark, a.rows).cache()
    src.count()
    os.makedirs(a.out, exist_ok=True)
    times = {"dk": [], "delta": []}

    def run(engine, i):
        path = os.path.join(a.out, f"{engine}_{i}")
        shutil.rmtree(path, ignore_errors=True)
        w = src.write.format(engine).mode("append").partitionBy("l_year")
        if engine == "dk" and a.no_cluster:
            w = w.option("clusterByPartitionColumns", "false")
        t0 = time.perf_counter()
        w.save(path)
        return time.perf_counter() - t0, path

    for i in range(a.runs + 1):  # run 0 warms both engines up
        order = ("dk", "delta") if i % 2 == 0 else ("delta", "dk")
        for e in order:
            t, path = run(e, i)
            if i > 0:
                times[e].append(t)
            print(f"run {i} {e}: {t:.2f}s", flush=True)
    last = {e: os.path.join(a.out, f"{e}_{a.runs}") for e in times}
    check = {}
    for e, p in last.items():
        r = spark.read.format("delta").load(p).selectExpr(
            "count(*)", "sum(l_orderkey)", "sum(l_quantity)", "count(distinct l_year)").first()
        check[e] = [str(x) for x in r]
        files = sum(len(fs) for _, _, fs in os.walk(p) if True) - len(os.listdir(os.path.join(p, "_delta_log")))
        check[e].append(f"{files} files")
    assert check["dk"][:4] == check["delta"][:4], check
    med = {e: statistics.median(v) for e, v in times.items()}
    ratio = med["delta"] / med["dk"]
    res = {"benchmark": "P12-insert", "rows": a.rows, "runs": a.runs, "cluster": not a.no_cluster,
           "median_s": med, "best_s": {e: min(v) for e, v in times.items()}, "all_s": times,
           "ratio_delta_over_dk": ratio, "check": check, "target": 1.5,
           "date": datetime.date.today().isoformat()}
    print(json.dumps(res, indent=1))
    print(f"P12 INSERT {a.rows} rows partitioned: dk {med['dk']:.2f}s, delta-spark {med['delta']:.2f}s "
          f"(median of {a.runs}): ratio {ratio:.2f}x (target >= 1.5x)")
    d = os.path.join(HERE, "results")
    os.makedirs(d, exist_ok=True)
    tag = "" if not a.no_cluster else "-nocluster"
    with open(os.path.join(d, f"spark_p12{tag}-{res['date']}.json"), "w") as f:
        json.dump(res, f, indent=1)
    spark.stop()


if __name__ == "__main__":
    main()
