#!/usr/bin/env python3
"""Generate the interop tables and dump their Spark oracle in ONE SparkSession (saves a JVM start).

Usage: build.py OUTDIR [NAME ...]     (idempotent: finished tables/oracles are skipped)
Prints per-table timings and writes OUTDIR/timings.json.
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def _jvm_cpu_s(spark):
    """CPU seconds used by the Spark JVM so far (load-independent cost measure)."""
    try:
        pid = spark._jvm.java.lang.ProcessHandle.current().pid()
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return round((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), 1)
    except Exception:  # noqa: BLE001
        return None


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    outdir = os.path.abspath(argv[1])
    names = set(argv[2:]) or None
    import gen_tables
    import dump_oracle
    import sql_oracle
    from sparkenv import get_spark
    todo = [n for n in gen_tables.table_names() if (not names or n in names) and not all(
        os.path.exists(os.path.join(outdir, n, f)) for f in ("DONE", "oracle.json"))]
    todo += sql_oracle.stale(outdir, names)
    if not todo:
        print("interop build: all tables and oracles present in %s" % outdir)
        return 0
    t0 = time.time()
    spark = get_spark("dk-interop")
    t1 = time.time()
    gen = gen_tables.generate(spark, outdir, names, log=lambda m: print(m, flush=True))
    t2 = time.time()
    dump = dump_oracle.dump(spark, outdir, names, log=lambda m: print(m, flush=True))
    sql = sql_oracle.dump(spark, outdir, names, log=lambda m: print(m, flush=True))
    t3 = time.time()
    jvm_cpu = _jvm_cpu_s(spark)
    spark.stop()
    timings = {"spark_start_s": round(t1 - t0, 1), "generate_s": round(t2 - t1, 1),
               "dump_s": round(t3 - t2, 1), "total_s": round(time.time() - t0, 1),
               "jvm_cpu_s": jvm_cpu, "python_cpu_s": round(time.process_time(), 1),
               "load_avg_1m": round(os.getloadavg()[0], 1),
               "generate_tables": gen, "dump_tables": dump,
               "sql_oracle_tables": sql}
    with open(os.path.join(outdir, "timings.json"), "w") as f:
        json.dump(timings, f, indent=1)
    print("interop build: start %(spark_start_s)ss, generate %(generate_s)ss, dump %(dump_s)ss, "
          "total %(total_s)ss (JVM CPU %(jvm_cpu_s)ss, load avg %(load_avg_1m)s)" % timings,
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
