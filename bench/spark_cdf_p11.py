"""Spark side of P11 "cdf_p11" (issue #19): writes the benchmark's table, or times Spark's
table_changes over it.

usage: .venv/bin/python bench/spark_cdf_p11.py gen SOURCE_PARQUET TABLE
       .venv/bin/python bench/spark_cdf_p11.py read TABLE START END

gen: the 6M-row lineitem-like source (bench/parquet_decode.py) as a Delta table with
delta.enableChangeDataFeed and deletion vectors, 100 files clustered on l_orderkey (v0), then
100 commits: every third an append of ~2,000 new rows, an UPDATE of ~2,000 rows (deletion
vectors + cdc files) or a DELETE of ~2,000 rows (deletion vectors, no cdc files: readers
infer the deletes from the DV differences), over key ranges spread across the table (seeded).
Writes TABLE.tmp, then renames it to TABLE.

read: in a warm session (start-up and a first read of the table's log before the clock),
spark.read.format("delta").option("readChangeFeed", "true") over [START, END] written to the
"noop" sink (every row produced, nothing kept); prints {"seconds", "rows"} (rows from a
count of the same DataFrame, after the clock).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "interop"))

COMMITS = 100
SPAN = 4000  # l_orderkey span of one DML (keys step 8, 4 rows a key: ~2,000 rows)
MAX_KEY = 12_000_000


def session(name: str):
    from sparkenv import SPARK_CONF, ensure_java_home
    os.environ["TZ"] = "UTC"
    time.tzset()
    ensure_java_home()
    from pyspark.sql import SparkSession
    from delta import configure_spark_with_delta_pip
    b = SparkSession.builder.master("local[2]").appName(name)
    for k, v in SPARK_CONF.items():
        b = b.config(k, v)
    b = b.config("spark.driver.memory", "4g").config("spark.sql.codegen.wholeStage", "true")
    spark = configure_spark_with_delta_pip(b).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def gen(src: str, table: str) -> None:
    spark = session("dk-bench-p11-gen")
    src, table = os.path.abspath(src), os.path.abspath(table)  # delta.`...` needs a full path
    tmp = table + ".tmp"
    t = "delta.`%s`" % tmp
    log = os.path.join(tmp, "_delta_log")
    done = os.path.exists(os.path.join(log, "%020d.json" % 0)) and \
        not os.path.exists(os.path.join(log, "%020d.json" % 1))
    if not done:  # (an interrupted run that wrote v0 only resumes after it)
        shutil.rmtree(tmp, ignore_errors=True)
        # v0 by the DataFrame writer; the table properties come from the session defaults of
        # the creating write
        spark.conf.set("spark.databricks.delta.properties.defaults.enableChangeDataFeed", "true")
        spark.conf.set("spark.databricks.delta.properties.defaults.enableDeletionVectors", "true")
        spark.read.parquet(src).repartitionByRange(100, "l_orderkey") \
            .sortWithinPartitions("l_orderkey").write.format("delta").save(tmp)
    props = {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES {t}").collect()}
    assert props.get("delta.enableChangeDataFeed") == "true", props
    assert props.get("delta.enableDeletionVectors") == "true", props
    spark.read.parquet(src).createOrReplaceTempView("p11_rows")
    cols = [f.name for f in spark.table("p11_rows").schema.fields]
    rnd = random.Random(11)
    for i in range(COMMITS):
        a = rnd.randrange(1, MAX_KEY - SPAN)
        where = f"l_orderkey BETWEEN {a} AND {a + SPAN}"
        if i % 3 == 0:
            sel = ", ".join(f"l_orderkey + {100_000_000 + i * 10_000_000} AS l_orderkey"
                            if c == "l_orderkey" else c for c in cols)
            spark.sql(f"INSERT INTO {t} SELECT {sel} FROM p11_rows WHERE {where}")
        elif i % 3 == 1:
            spark.sql(f"UPDATE {t} SET l_quantity = l_quantity + 1 WHERE {where}")
        else:
            spark.sql(f"DELETE FROM {t} WHERE {where}")
    spark.stop()
    os.rename(tmp, table)


def read(table: str, start: str, end: str) -> None:
    spark = session("dk-bench-p11")
    from pyspark.sql import functions as F  # noqa: F401 - imported before the clock
    spark.sql("DESCRIBE HISTORY delta.`%s` LIMIT 1" % table).collect()

    def df():
        return (spark.read.format("delta").option("readChangeFeed", "true")
                .option("startingVersion", start).option("endingVersion", end).load(table))
    t0 = time.perf_counter()
    df().write.format("noop").mode("overwrite").save()
    seconds = time.perf_counter() - t0
    rows = df().count()
    spark.stop()
    print(json.dumps({"seconds": seconds, "rows": int(rows)}), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        gen(sys.argv[2], sys.argv[3])
    else:
        read(sys.argv[2], sys.argv[3], sys.argv[4])
