"""Spark row of P11b "refresh" (issue #19): DeltaLog.update() after one new commit.

usage: .venv/bin/python bench/spark_refresh.py TABLE COMMIT

One process per run: SparkSession start and a first DeltaLog.forTable(...).update() plus
snapshot.allFiles.count() (the state a long-running session holds) happen before the clock;
then COMMIT is published as the next version, and timed: DeltaLog.update() (Delta lists the
new commit and builds the new snapshot's log segment; its state is computed lazily) as
"seconds", then allFiles.count() of the new snapshot (its state reconstruction) as
"pass_seconds". Prints {"seconds", "pass_seconds", "rows", "version"}. The commit is removed
before exit.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "interop"))


def main(path: str, commit: str) -> None:
    from sparkenv import SPARK_CONF, ensure_java_home
    os.environ["TZ"] = "UTC"
    time.tzset()
    ensure_java_home()
    from pyspark.sql import SparkSession
    from delta import configure_spark_with_delta_pip
    b = SparkSession.builder.master("local[2]").appName("dk-bench-p11b")
    for k, v in SPARK_CONF.items():
        b = b.config(k, v)
    b = b.config("spark.driver.memory", "4g")
    spark = configure_spark_with_delta_pip(b).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    jvm = spark._jvm
    none = jvm.scala.Option.empty()
    log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, path)
    snap = log.update(False, none, none)
    snap.allFiles().count()
    nxt = os.path.join(path, "_delta_log", "%020d.json" % (int(snap.version()) + 1))
    shutil.copyfile(commit, nxt)
    try:
        t0 = time.perf_counter()
        snap2 = log.update(False, none, none)
        t1 = time.perf_counter()
        rows = int(snap2.allFiles().count())
        t2 = time.perf_counter()
        version = int(snap2.version())
    finally:
        os.unlink(nxt)
    spark.stop()
    print(json.dumps({"seconds": t1 - t0, "pass_seconds": t2 - t1, "rows": rows,
                      "version": version}), flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: spark_refresh.py TABLE COMMIT")
    main(sys.argv[1], sys.argv[2])
