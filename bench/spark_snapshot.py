"""Spark row of P1 "snapshot_load" (issue #3): a cold JVM loads a Delta table's latest snapshot
with delta-spark and iterates all its files.

usage: .venv/bin/python bench/spark_snapshot.py TABLE

One fresh process per run (bench/run.py): Python imports happen first, then the clock starts;
  1. JVM start: SparkSession.builder...getOrCreate() (local[2], delta-spark from Ivy's cache,
     the settings of tests/interop/sparkenv.py plus 4 GiB driver memory) — reported apart as
     jvm_start_seconds / jvm_start_cpu_seconds;
  2. the operation: DeltaLog.forTable(spark, TABLE) (fresh: no DeltaLog cache in a new JVM),
     .update() (log segment listing, protocol/metadata), then snapshot.allFiles().count(),
     which runs Delta's state reconstruction (checkpoint + JSON commits, reconciled by path)
     over every file — timed as "seconds"; "cpu_seconds" is the CPU time the JVM and this
     process used during the operation (JVM CPU from /proc/<pid>/stat);
  3. cold_seconds = 1 + 2 (what a one-shot `spark-submit` pays).
Prints one JSON line {"seconds", "cpu_seconds", "rows", "version", "jvm_start_seconds", ...}.
The JVM is stopped and reaped before exit so that its peak RSS reaches the runner (wait4).
"""

from __future__ import annotations

import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "interop"))


def _proc_cpu(pid: int) -> float:
    """utime + stime of process pid (all its threads), seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _proc_hwm_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def main(path: str) -> None:
    from sparkenv import SPARK_CONF, ensure_java_home
    os.environ["TZ"] = "UTC"
    time.tzset()
    ensure_java_home()
    from pyspark.sql import SparkSession
    from delta import configure_spark_with_delta_pip

    py0, t0 = time.process_time(), time.perf_counter()
    b = SparkSession.builder.master("local[2]").appName("dk-bench-p1")
    for k, v in SPARK_CONF.items():
        b = b.config(k, v)
    b = b.config("spark.driver.memory", "4g")
    spark = configure_spark_with_delta_pip(b).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    jvm = spark._jvm
    pid = int(jvm.java.lang.ProcessHandle.current().pid())
    t1, py1, jcpu1 = time.perf_counter(), time.process_time(), _proc_cpu(pid)

    log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, path)
    snap = log.update(False, jvm.scala.Option.empty(), jvm.scala.Option.empty())
    t_load = time.perf_counter() - t1
    rows = int(snap.allFiles().count())
    version = int(snap.version())
    t2, py2, jcpu2 = time.perf_counter(), time.process_time(), _proc_cpu(pid)
    hwm = _proc_hwm_kb(pid)

    out = {"seconds": t2 - t1, "cpu_seconds": (jcpu2 - jcpu1) + (py2 - py1), "rows": rows,
           "version": version, "load_seconds": t_load, "jvm_start_seconds": t1 - t0,
           "jvm_start_cpu_seconds": jcpu1 + (py1 - py0), "cold_seconds": t2 - t0,
           "jvm_peak_rss_mib": hwm / 1024.0}
    # reap the JVM: its ru_maxrss then folds into this process' (what run.py measures)
    proc = getattr(spark.sparkContext._gateway, "proc", None)
    spark.stop()
    if proc is not None:
        try:
            proc.stdin.close()
        except Exception:
            pass
        try:
            proc.wait(timeout=30)
        except Exception:
            proc.kill()
            proc.wait()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: spark_snapshot.py TABLE")
    main(sys.argv[1])
