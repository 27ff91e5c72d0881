"""delta-spark over s3a:// in a process of its own (tests/spark/test_spark_s3a_delta.py): a
SparkSession with delta-spark and hadoop-aws from Maven Central (its AWS SDK v2 bundle comes
with it; ~700 MB into the Ivy cache on first use), configured for the S3 test server, reads
the given versions of a table and prints one JSON line per version: {"version", "rows"} with
the rows as sorted lists of strings.

  python s3a_reader.py ENDPOINT ACCESS_KEY SECRET_KEY s3a://bucket/table VERSION...
  (VERSION: a number, or "latest")
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "interop"))

from sparkenv import SPARK_CONF, ensure_java_home  # noqa: E402

HADOOP_AWS = "org.apache.hadoop:hadoop-aws:3.5.0"  # Spark 4's Hadoop client is 3.5.0


def main(endpoint, access, secret, uri, *versions):
    os.environ["TZ"] = "UTC"
    ensure_java_home()
    from delta import configure_spark_with_delta_pip
    from pyspark.sql import SparkSession
    b = SparkSession.builder.master("local[1]").appName("dk-s3a-oracle")
    for k, v in SPARK_CONF.items():
        b = b.config(k, v)
    s3a = {"access.key": access, "secret.key": secret, "endpoint": endpoint,
           "path.style.access": "true", "connection.ssl.enabled": "false",
           "endpoint.region": "us-east-1"}
    for k, v in s3a.items():
        b = b.config(f"spark.hadoop.fs.s3a.{k}", v)
    s = configure_spark_with_delta_pip(b, extra_packages=[HADOOP_AWS]).getOrCreate()
    s.sparkContext.setLogLevel("ERROR")
    try:
        for v in versions:
            r = s.read.format("delta")
            if v != "latest":
                r = r.option("versionAsOf", int(v))
            rows = sorted(json.dumps([None if x is None else str(x) for x in row])
                          for row in r.load(uri).collect())
            print(json.dumps({"version": v, "rows": rows}), flush=True)
    finally:
        s.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
