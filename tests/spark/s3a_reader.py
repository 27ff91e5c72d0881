"""delta-spark over s3a:// in a process of its own (tests/spark/test_spark_s3a_delta.py): a
SparkSession with delta-spark and hadoop-aws from Maven Central (its AWS SDK v2 bundle comes
with it; ~700 MB into the Ivy cache on first use), configured for the S3 test server.

  python s3a_reader.py read ENDPOINT ACCESS_KEY SECRET_KEY s3a://bucket/table VERSION...
      reads the given versions ("latest" or a number) and prints one JSON line per version:
      {"version", "rows"}, the rows as sorted lists of strings;
  python s3a_reader.py write ENDPOINT ACCESS_KEY SECRET_KEY s3a://bucket/table [DK_JAR]
      delta-spark writes a table there (WRITES below: create with deletion vectors and a
      checkpoint interval of 5, appends, DELETEs and an UPDATE with deletion vectors, its
      checkpoint at version 5), then prints one JSON line per version: {"version", "op",
      "delta": rows delta-spark reads, "dk": rows the dk connector (DK_JAR, in the same
      session; libdk's own S3 client, credentials from the same fs.s3a.* conf) reads}.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "interop"))

from sparkenv import SPARK_CONF, ensure_java_home  # noqa: E402

HADOOP_AWS = "org.apache.hadoop:hadoop-aws:3.5.0"  # Spark 4's Hadoop client is 3.5.0
COLS = ("id", "s", "p")
WRITES = [  # (operation, SQL or an append's id range); {t} is the table
    ("CREATE TABLE", "CREATE TABLE {t} (id BIGINT, s STRING, p INT) USING delta PARTITIONED BY (p) "
                     "TBLPROPERTIES ('delta.enableDeletionVectors'='true', "
                     "'delta.checkpointInterval'='5')"),
    ("WRITE", (0, 40)),
    ("WRITE", (40, 80)),
    ("DELETE", "DELETE FROM {t} WHERE id % 5 = 2"),
    ("WRITE", (80, 100)),
    ("UPDATE", "UPDATE {t} SET s = concat(s, '-u') WHERE id % 7 = 0"),
    ("DELETE", "DELETE FROM {t} WHERE p = 1 AND id > 60"),
    ("WRITE", (100, 110)),
]


def _rows(df):
    return sorted(json.dumps([None if x is None else str(x) for x in row])
                  for row in df.select(*COLS).collect())


def session(endpoint, access, secret, jar=None):
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
    if jar:
        b = b.config("spark.jars", jar)
    s = configure_spark_with_delta_pip(b, extra_packages=[HADOOP_AWS]).getOrCreate()
    s.sparkContext.setLogLevel("ERROR")
    return s


def read(endpoint, access, secret, uri, *versions):
    s = session(endpoint, access, secret)
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


def write(endpoint, access, secret, uri, jar=None):
    s = session(endpoint, access, secret, jar)
    t = f"delta.`{uri}`"
    try:
        for op, w in WRITES:
            if isinstance(w, str):
                s.sql(w.format(t=t))
            else:
                s.range(w[0], w[1], 1, 2).selectExpr(
                    "id", "concat('s', CAST(id AS STRING)) AS s", "CAST(id % 3 AS INT) AS p") \
                    .write.format("delta").mode("append").save(uri)
        for v, (op, _) in enumerate(WRITES):
            out = {"version": v, "op": op,
                   "delta": _rows(s.read.format("delta").option("versionAsOf", v).load(uri))}
            if jar:
                out["dk"] = _rows(s.read.format("dk").option("versionAsOf", v).load(uri))
            print(json.dumps(out), flush=True)
        if jar:  # the latest version, through the connector's snapshot cache
            print(json.dumps({"version": "latest", "delta": _rows(s.read.format("delta").load(uri)),
                              "dk": _rows(s.read.format("dk").load(uri))}), flush=True)
    finally:
        s.stop()


if __name__ == "__main__":
    {"read": read, "write": write}[sys.argv[1]](*sys.argv[2:])
