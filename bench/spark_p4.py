"""Benchmark P4: TPC-H-like queries over a partitioned lineitem/orders pair, read through the
dk connector (format "dk") and delta-spark (format "delta") in ONE SparkSession.

Tables are written once by delta-spark into OUTDIR (default build/bench-spark) and reused.
Each query runs warm-up + N timed runs per engine, alternating engines; the report is the
per-query ratio delta/dk of the best times and their geometric mean (> 1 = dk faster), and
the results of both engines are checked to be identical.

  .venv/bin/python bench/spark_p4.py [--orders 300000] [--runs 3] [--out build/bench-spark]
"""
import argparse
import glob
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "interop"))

QUERIES = {
    # Q1: pricing summary (scan + aggregate, shipdate predicate on a partition column)
    "q1": """SELECT l_returnflag, l_linestatus, sum(l_quantity) AS sum_qty,
                    sum(l_extendedprice) AS sum_base, sum(l_extendedprice * (1 - l_discount)) AS sum_disc,
                    avg(l_quantity) AS avg_qty, avg(l_discount) AS avg_disc, count(*) AS n
             FROM {li} WHERE l_shipyear <= 1997 AND l_shipdate <= DATE'1998-09-02'
             GROUP BY l_returnflag, l_linestatus""",
    # Q6: forecast revenue change (selective data predicates + partition pruning)
    "q6": """SELECT sum(l_extendedprice * l_discount) AS revenue FROM {li}
             WHERE l_shipyear = 1994 AND l_shipdate >= DATE'1994-01-01' AND l_shipdate < DATE'1995-01-01'
               AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24""",
    # Q3-like: join with filters on both sides
    "q3": """SELECT l_orderkey, sum(l_extendedprice * (1 - l_discount)) AS revenue, o_orderdate
             FROM {o} o JOIN {li} l ON l.l_orderkey = o.o_orderkey
             WHERE o.o_orderdate < DATE'1995-03-15' AND l.l_shipdate > DATE'1995-03-15'
             GROUP BY l_orderkey, o_orderdate ORDER BY revenue DESC, l_orderkey LIMIT 10""",
    # Q12-like: shipmode IN list, join
    "q12": """SELECT l_shipmode, sum(CASE WHEN o_orderpriority IN ('1-URGENT','2-HIGH') THEN 1 ELSE 0 END) AS hi,
                     count(*) AS n
              FROM {o} o JOIN {li} l ON o.o_orderkey = l.l_orderkey
              WHERE l_shipmode IN ('MAIL', 'SHIP') AND l_shipyear = 1994 AND l_receiptdate >= DATE'1994-01-01'
              GROUP BY l_shipmode""",
    # Q14-like: one month of shipments (partition + data predicate)
    "q14": """SELECT 100.0 * sum(CASE WHEN l_returnflag = 'R' THEN l_extendedprice * (1 - l_discount) ELSE 0 END)
                     / sum(l_extendedprice * (1 - l_discount)) AS promo
              FROM {li} WHERE l_shipyear = 1995 AND l_shipdate >= DATE'1995-09-01' AND l_shipdate < DATE'1995-10-01'""",
    # dynamic partition pruning: orders years picked by a selective dimension-side predicate
    "dpp": """SELECT count(*) AS n, sum(l_quantity) AS q FROM {li} l
              JOIN (SELECT DISTINCT year(o_orderdate) AS y FROM {o} WHERE o_orderkey = 7) d
              ON l.l_shipyear = d.y""",
    # full scan of a few columns
    "scan": "SELECT count(*), sum(l_extendedprice), max(l_comment) FROM {li}",
}


def session(jar):
    from sparkenv import SPARK_CONF, ensure_java_home
    os.environ["TZ"] = "UTC"
    time.tzset()
    ensure_java_home()
    from pyspark.sql import SparkSession
    from delta import configure_spark_with_delta_pip
    b = SparkSession.builder.master("local[2]").appName("dk-bench-p4")
    for k, v in SPARK_CONF.items():
        b = b.config(k, v)
    b = b.config("spark.jars", jar).config("spark.driver.memory", "2g")
    b = b.config("spark.sql.codegen.wholeStage", "true")
    s = configure_spark_with_delta_pip(b).getOrCreate()
    s.sparkContext.setLogLevel("ERROR")
    return s


def generate(spark, out, n_orders):
    li, o = os.path.join(out, "lineitem"), os.path.join(out, "orders")
    if os.path.exists(os.path.join(out, "DONE")):
        return li, o
    from pyspark.sql import functions as F
    orders = (spark.range(1, n_orders + 1, 1, 4).withColumnRenamed("id", "o_orderkey")
              .withColumn("o_orderdate", F.expr("date_add(DATE'1992-01-01', cast(pmod(o_orderkey * 7919, 2400) AS int))"))
              .withColumn("o_orderpriority", F.expr("element_at(array('1-URGENT','2-HIGH','3-MEDIUM','4-NOT SPECIFIED','5-LOW'), cast(pmod(o_orderkey, 5) + 1 AS int))"))
              .withColumn("o_totalprice", F.expr("cast(pmod(o_orderkey * 31, 50000000) / 100 AS decimal(12,2))"))
              .withColumn("o_orderyear", F.year("o_orderdate")))
    orders.write.format("delta").partitionBy("o_orderyear").mode("overwrite").save(o)
    lines = (spark.read.format("delta").load(o)
             .withColumn("n", F.expr("sequence(1, cast(pmod(o_orderkey, 7) + 1 AS int))"))
             .select("o_orderkey", "o_orderdate", F.explode("n").alias("l_linenumber"))
             .withColumnRenamed("o_orderkey", "l_orderkey")
             .withColumn("h", F.expr("xxhash64(l_orderkey, l_linenumber)"))
             .withColumn("l_quantity", F.expr("cast(pmod(h, 50) + 1 AS decimal(12,2))"))
             .withColumn("l_extendedprice", F.expr("cast(pmod(h, 10000000) / 100 AS decimal(12,2))"))
             .withColumn("l_discount", F.expr("cast(pmod(h, 11) / 100 AS decimal(12,2))"))
             .withColumn("l_returnflag", F.expr("element_at(array('A','N','R'), cast(pmod(h, 3) + 1 AS int))"))
             .withColumn("l_linestatus", F.expr("element_at(array('F','O'), cast(pmod(h, 2) + 1 AS int))"))
             .withColumn("l_shipdate", F.expr("date_add(o_orderdate, cast(pmod(h, 121) + 1 AS int))"))
             .withColumn("l_receiptdate", F.expr("date_add(l_shipdate, cast(pmod(h, 30) + 1 AS int))"))
             .withColumn("l_shipmode", F.expr("element_at(array('REG AIR','AIR','RAIL','SHIP','TRUCK','MAIL','FOB'), cast(pmod(h, 7) + 1 AS int))"))
             .withColumn("l_comment", F.expr("concat('c', cast(pmod(h, 100000) AS string))"))
             .withColumn("l_shipyear", F.year("l_shipdate"))
             .drop("h", "o_orderdate"))
    lines.repartition(8).write.format("delta").partitionBy("l_shipyear").mode("overwrite").save(li)
    open(os.path.join(out, "DONE"), "w").close()
    return li, o


def jvm_cpu_s(spark):
    """CPU seconds (user + system, all threads) of the Spark JVM so far: local mode runs
    driver and executors in it, so a query's difference is its CPU cost, whatever the load."""
    pid = spark._jvm.java.lang.ProcessHandle.current().pid()
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(spark, q, li, o, fmt):
    text = QUERIES[q].format(li=f"{fmt}.`{li}`", o=f"{fmt}.`{o}`")
    c = jvm_cpu_s(spark)
    t = time.perf_counter()
    rows = spark.sql(text).collect()
    return time.perf_counter() - t, jvm_cpu_s(spark) - c, rows


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def norm(rows):
    return sorted(repr(tuple(r)) for r in rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--orders", type=int, default=300000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(REPO, "build", "bench-spark"))
    ap.add_argument("--queries", default=",".join(QUERIES))
    a = ap.parse_args()
    jars = [j for j in glob.glob(os.path.join(REPO, "connectors/spark/target/dk-spark_2.13-*.jar"))
            if "original-" not in j]
    if not jars:
        sys.exit("build the connector first: make test-spark (or mvn package in connectors/spark)")
    spark = session(os.environ.get("DK_SPARK_JAR", jars[-1]))
    spark.conf.set("spark.sql.catalog.dk", "io.dk.spark.DkCatalog")
    a.out = os.path.abspath(a.out)
    out = os.path.join(a.out, f"o{a.orders}")
    os.makedirs(out, exist_ok=True)
    li, o = generate(spark, out, a.orders)
    report = {"orders": a.orders, "lineitem_rows": spark.read.format("delta").load(li).count(),
              "runs": a.runs, "load_avg_1m_start": round(os.getloadavg()[0], 1), "queries": {}}
    print("query   best wall s (dk / delta)   median wall s (dk / delta)   median JVM CPU s "
          "(dk / delta)   speedup: best  median  CPU", flush=True)
    for q in a.queries.split(","):
        wall = {"dk": [], "delta": []}
        cpu = {"dk": [], "delta": []}
        res = {}
        for i in range(a.runs + 1):  # first round = warm-up
            for fmt in ("delta", "dk"):
                t, c, rows = run(spark, q, li, o, fmt)
                res[fmt] = rows
                if i:
                    wall[fmt].append(t)
                    cpu[fmt].append(c)
        same = norm(res["dk"]) == norm(res["delta"])
        best = {f: min(wall[f]) for f in wall}
        med = {f: median(wall[f]) for f in wall}
        mcpu = {f: median(cpu[f]) for f in cpu}
        ratio = best["delta"] / best["dk"]
        mratio = med["delta"] / med["dk"]
        cratio = mcpu["delta"] / mcpu["dk"] if mcpu["dk"] > 0 else math.nan
        report["queries"][q] = {"dk_s": round(best["dk"], 3), "delta_s": round(best["delta"], 3),
                                "dk_median_s": round(med["dk"], 3),
                                "delta_median_s": round(med["delta"], 3),
                                "dk_cpu_s": round(mcpu["dk"], 2), "delta_cpu_s": round(mcpu["delta"], 2),
                                "speedup": round(ratio, 2), "speedup_median": round(mratio, 2),
                                "cpu_ratio": round(cratio, 2), "same_result": same}
        print(f"{q:5s}   {best['dk']:7.3f} / {best['delta']:7.3f}        {med['dk']:7.3f} / "
              f"{med['delta']:7.3f}          {mcpu['dk']:6.2f} / {mcpu['delta']:6.2f}          "
              f"     {ratio:5.2f}x {mratio:5.2f}x {cratio:5.2f}x  {'ok' if same else 'RESULTS DIFFER'}",
              flush=True)

    def geo(key):
        v = [x[key] for x in report["queries"].values() if x[key] > 0]
        return math.exp(sum(math.log(x) for x in v) / len(v)) if v else math.nan
    g = geo("speedup")
    report["geomean_speedup"] = round(g, 3)
    report["geomean_speedup_median"] = round(geo("speedup_median"), 3)
    report["geomean_cpu_ratio"] = round(geo("cpu_ratio"), 3)
    report["load_avg_1m_end"] = round(os.getloadavg()[0], 1)
    report["target"] = 1.3
    print(f"geomean speedup dk vs delta-spark: best {g:.2f}x, median "
          f"{report['geomean_speedup_median']:.2f}x, JVM CPU {report['geomean_cpu_ratio']:.2f}x "
          f"(target >= 1.3x); load average {report['load_avg_1m_start']} -> "
          f"{report['load_avg_1m_end']}")
    with open(os.path.join(a.out, "p4.json"), "w") as f:
        json.dump(report, f, indent=1)
    spark.stop()
    return 0 if all(v["same_result"] for v in report["queries"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
