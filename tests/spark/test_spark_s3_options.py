"""Where the connector takes an S3 table's storage options from, and what they key (issue #17):

  * per-read options, as delta-spark accepts them: .option("fs.s3a.access.key", ...) etc.;
  * the session's Hadoop configuration (sparkContext.hadoopConfiguration: core-site.xml and
    the other Hadoop resources), here a real core-site.xml file added to it, with S3A's
    per-bucket keys (fs.s3a.bucket.<bucket>.*);
  * the snapshot cache is keyed by path and storage options: the same s3a:// path through a
    second endpoint (a counting proxy in front of the same server) or with other credentials
    is not served the first reader's snapshot;
  * streams (readStream, Trigger.AvailableNow) and change data feed reads of the S3 table get
    the same options on the driver and the executors.

The S3 server is SeaweedFS (tests/python/s3env.py) with a bucket of its own. The oracle is
delta-spark in the same session reading the local copy of the uploaded table: batch reads,
the change data feed, and a stream's batches (offsets and rows) are compared."""
import os
import sys

import pytest

from sparkcmp import assert_same
from test_spark_stream import _run

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

from s3env import FaultProxy, S3Server  # noqa: E402

BUCKET = "dk-spark-opts"
CDF = "'delta.enableChangeDataFeed'='true'"


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    try:
        S3Server.build()
        srv = S3Server(tmp_path_factory.mktemp("s3server"), bucket=BUCKET).start()
    except Exception as e:  # noqa: BLE001
        pytest.fail(f"the S3 test server could not be started: {e}")
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def table(spark, s3, tmp_path_factory):
    """A CDF table written by delta-spark locally (create, 3 appends, an UPDATE, a DELETE),
    uploaded to s3a://<bucket>/t; returns (s3a uri, local path)."""
    path = str(tmp_path_factory.mktemp("s3opts") / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, v STRING) USING delta "
              f"TBLPROPERTIES ({CDF})")
    for lo, files in ((0, 2), (40, 1), (60, 2)):
        spark.range(lo, lo + 20, 1, files).selectExpr(
            "id", "concat('v', cast(id as string)) as v").write.format("delta").mode(
                "append").save(path)
    spark.sql(f"UPDATE delta.`{path}` SET v = concat(v, '-u') WHERE id % 5 = 0")
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id % 7 = 1")
    c = s3.client()
    for root, _, files in os.walk(path):
        for f in files:
            p = os.path.join(root, f)
            if f.endswith(".crc") and not root.endswith("_delta_log"):
                continue
            c.upload_file(p, s3.bucket, "t/" + os.path.relpath(p, path))
    return f"s3a://{s3.bucket}/t", path


def _opts(s3, endpoint=None, secret=None):
    ep = (endpoint or s3.endpoint).replace("http://", "")  # as S3A takes it: host:port
    return {"fs.s3a.access.key": s3.access_key, "fs.s3a.secret.key": secret or s3.secret_key,
            "fs.s3a.endpoint": ep, "fs.s3a.path.style.access": "true",
            "fs.s3a.connection.ssl.enabled": "false"}


def _read(spark, opts, **extra):
    r = spark.read.format("dk")
    for k, v in {**opts, **extra}.items():
        r = r.option(k, v)
    return r


def test_per_read_options(spark, s3, table):
    uri, local = table
    assert_same(_read(spark, _opts(s3)).load(uri), spark.read.format("delta").load(local),
                "fs.s3a.* read options")
    assert_same(_read(spark, _opts(s3), versionAsOf="2").load(uri),
                spark.read.format("delta").option("versionAsOf", 2).load(local), "v2")


def test_core_site_xml(spark, s3, table, tmp_path):
    """A core-site.xml with the per-bucket S3A keys, added to the session's Hadoop
    configuration; no session conf, no read options."""
    uri, local = table
    props = {k.replace("fs.s3a.", f"fs.s3a.bucket.{BUCKET}."): v for k, v in _opts(s3).items()}
    xml = tmp_path / "core-site.xml"
    xml.write_text("<?xml version=\"1.0\"?>\n<configuration>\n" + "".join(
        f"  <property><name>{k}</name><value>{v}</value></property>\n"
        for k, v in props.items()) + "</configuration>\n")
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    conf.addResource(jvm.org.apache.hadoop.fs.Path(xml.as_uri()))
    try:
        assert conf.get(f"fs.s3a.bucket.{BUCKET}.access.key") == s3.access_key
        assert_same(spark.read.format("dk").option("versionAsOf", 1).load(uri),
                    spark.read.format("delta").option("versionAsOf", 1).load(local),
                    "core-site.xml")
        df = spark.read.format("dk").load(uri)
        assert_same(df, spark.read.format("delta").load(local), "core-site.xml, latest")
    finally:
        for k in props:
            conf.unset(k)


def test_snapshot_cache_keyed_by_endpoint_and_credentials(spark, s3, table):
    uri, local = table
    want = spark.read.format("delta").load(local)
    assert_same(_read(spark, _opts(s3)).load(uri), want, "direct endpoint")
    proxy = FaultProxy(s3.endpoint)
    try:
        # the same path through a second endpoint: its own snapshot, read through that endpoint
        assert_same(_read(spark, _opts(s3, endpoint=proxy.endpoint)).load(uri), want, "proxy")
        log = proxy.requests(match="_delta_log|list-type")
        assert log, "the second endpoint was served the first endpoint's cached snapshot"
        data = proxy.requests("GET", match=r"\.parquet")
        assert data, "the executors did not read through the second endpoint"
    finally:
        proxy.close()
    # other credentials: not the cached snapshot (latest, no time travel), S3 refuses them
    with pytest.raises(Exception, match="HTTP 403"):
        _read(spark, _opts(s3, secret="wrong")).load(uri).collect()
    assert_same(_read(spark, _opts(s3)).load(uri), want, "direct endpoint again")


def test_stream_and_change_feed_with_read_options(spark, s3, table, tmp_path):
    uri, local = table
    so = {"startingVersion": "1", "ignoreChanges": "true", "maxFilesPerTrigger": "1"}
    want = _run(spark, "delta", local, so, str(tmp_path / "delta"))
    got = _run(spark, "dk", uri, {**_opts(s3), **so}, str(tmp_path / "dk"))
    assert [b[2] for b in got] == [b[2] for b in want]
    assert [b[:2] for b in got] == [b[:2] for b in want]
    assert len(got) >= 3  # one file a batch
    for start, end in ((0, None), (1, 4), (4, 5)):
        extra = {"readChangeFeed": "true", "startingVersion": str(start)}
        if end is not None:
            extra["endingVersion"] = str(end)
        d = spark.read.format("delta")
        for k, v in extra.items():
            d = d.option(k, v)
        # _commit_timestamp is the commit file's modification time: on S3 its upload time
        assert_same(_read(spark, _opts(s3), **extra).load(uri).drop("_commit_timestamp"),
                    d.load(local).drop("_commit_timestamp"), f"change feed {start}..{end}")
