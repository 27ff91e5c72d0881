"""Shared Spark set-up for the interop harness (gen_tables.py, dump_oracle.py).

One local SparkSession with Delta Lake (jars fetched from Maven Central by
delta-spark's configure_spark_with_delta_pip on first use, cached in ~/.ivy2.5.2).
Everything runs in UTC so timestamps are unambiguous.
"""
import glob
import os
import time

SPARK_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.session.timeZone": "UTC",
    # C1-only JIT + serial GC: the workload is many tiny jobs; this halves CPU time on 2 cores.
    "spark.driver.extraJavaOptions": "-Duser.timezone=UTC -XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
    # Delta state reconstruction defaults to 50 partitions: far too many for tiny tables.
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.databricks.delta.retentionDurationCheck.enabled": "false",
    # Keep defaults explicit: features are enabled per table by the generator only.
    "spark.databricks.delta.properties.defaults.enableDeletionVectors": "false",
    "spark.sql.adaptive.enabled": "false",
    # Tiny data: Janino compilation costs more than it saves.
    "spark.sql.codegen.wholeStage": "false",
}


def _java_major(home):
    try:
        with open(os.path.join(home, "release")) as f:
            for line in f:
                if line.startswith("JAVA_VERSION="):
                    v = line.split("=", 1)[1].strip().strip('"')
                    return int(v.split(".")[0])
    except (OSError, ValueError):
        pass
    return None


def ensure_java_home():
    """Spark 4.2 needs Java 17 or 21. Keep a valid JAVA_HOME, else pick an installed 17/21."""
    cur = os.environ.get("JAVA_HOME")
    if cur and _java_major(cur) in (17, 21) and os.path.exists(os.path.join(cur, "bin", "java")):
        return cur
    for pat in ("/usr/lib/jvm/java-17-openjdk*", "/usr/lib/jvm/java-21-openjdk*",
                "/usr/lib/jvm/temurin-17*", "/usr/lib/jvm/temurin-21*", "/usr/lib/jvm/*"):
        for home in sorted(glob.glob(pat)):
            if _java_major(home) in (17, 21) and os.path.exists(os.path.join(home, "bin", "java")):
                os.environ["JAVA_HOME"] = home
                return home
    raise RuntimeError("no Java 17/21 found for Spark (set JAVA_HOME)")


def get_spark(app="dk-interop"):
    os.environ["TZ"] = "UTC"
    time.tzset()
    ensure_java_home()
    from pyspark.sql import SparkSession
    from delta import configure_spark_with_delta_pip

    b = SparkSession.builder.master("local[2]").appName(app)
    for k, v in SPARK_CONF.items():
        b = b.config(k, v)
    spark = configure_spark_with_delta_pip(b).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def versions():
    import pyspark
    import importlib.metadata as md
    return {"pyspark": pyspark.__version__, "delta-spark": md.version("delta-spark"),
            "deltalake": md.version("deltalake")}
