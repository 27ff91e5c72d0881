"""pytest set-up for the dk Spark connector tests: one local[2] SparkSession carrying the
connector jar (connectors/spark/target) beside delta-spark 4.4.0 (the interop harness pins,
tests/interop/sparkenv.py), plus the `dk` catalog."""
import glob
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "interop"))
sys.path.insert(0, HERE)


def connector_jar():
    env = os.environ.get("DK_SPARK_JAR")
    if env:
        return env
    jars = sorted(glob.glob(os.path.join(REPO, "connectors", "spark", "target", "dk-spark_2.13-*.jar")))
    jars = [j for j in jars if "original-" not in os.path.basename(j)]
    return jars[-1] if jars else None


@pytest.fixture(scope="session")
def spark():
    try:
        import pyspark  # noqa: F401
        import delta  # noqa: F401
    except ImportError:
        pytest.skip("pyspark/delta-spark not installed (run scripts/install_spark.sh)")
    jar = connector_jar()
    if not jar or not os.path.exists(jar):
        pytest.skip("connector jar missing: run `make test-spark` (mvn package in connectors/spark)")
    import time
    from sparkenv import SPARK_CONF, ensure_java_home
    os.environ["TZ"] = "UTC"
    time.tzset()
    ensure_java_home()
    from pyspark.sql import SparkSession
    from delta import configure_spark_with_delta_pip

    b = SparkSession.builder.master("local[2]").appName("dk-spark-tests")
    for k, v in SPARK_CONF.items():
        b = b.config(k, v)
    b = (b.config("spark.jars", jar)
         .config("spark.sql.catalog.dk", "io.dk.spark.DkCatalog"))
    s = configure_spark_with_delta_pip(b).getOrCreate()
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


def interop_dir():
    return os.environ.get("DK_INTEROP_DIR") or os.path.join(REPO, "build", "interop")
