"""Spark reads s3a:// (and s3://) Delta tables through the dk connector: the connector hands the
URI to libdk, which reads log and data through its own S3 backend (driver: snapshot and
planning; executors: the splits), configured from the session's Hadoop S3A settings
(spark.hadoop.fs.s3a.access.key / secret.key / endpoint / path.style.access, set here at
runtime). Tables of the shared corpus are uploaded to the S3 test server (SeaweedFS,
tests/python/s3env.py); the oracle is delta-spark reading the same tables' local copies in the
same session (full scans, a pushed-down filter, time travel).

delta-spark itself over s3a:// needs hadoop-aws plus the AWS SDK v2 bundle (~700 MB from Maven
Central), too heavy for the shared session: test_spark_s3a_delta.py runs it in a session of its
own, on demand (DK_SPARK_S3A=1)."""
import os
import sys

import pytest

from sparkcmp import assert_same

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import dkharness  # noqa: E402
from s3env import S3Server  # noqa: E402

DATA = str(dkharness.testdata_dir())
# a partitioned table with deletion vectors and a checkpoint, a multi-part checkpoint, decimals
# with a partition column, column mapping by name
TABLES = ["delta-golden/dv-partitioned-with-checkpoint", "delta-golden/multi-part-checkpoint",
          "delta-golden/basic-decimal-table",
          "delta-kernel-defaults/data-reader-partition-values-column-mapping-name"]
S3A = ("access.key", "secret.key", "endpoint", "path.style.access", "connection.ssl.enabled")


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    try:
        S3Server.build()
        srv = S3Server(tmp_path_factory.mktemp("s3server")).start()
    except Exception as e:  # noqa: BLE001
        pytest.fail(f"the S3 test server could not be started: {e}")
    c = srv.client()
    for t in TABLES:
        for root, _, files in os.walk(os.path.join(DATA, t)):
            for f in files:
                p = os.path.join(root, f)
                c.upload_file(p, srv.bucket, "corpus/" + os.path.relpath(p, DATA))
    yield srv
    srv.stop()


@pytest.fixture
def s3a_conf(spark, s3):
    keys = [f"spark.hadoop.fs.s3a.{k}" for k in S3A]
    spark.conf.set(keys[0], s3.access_key)
    spark.conf.set(keys[1], s3.secret_key)
    spark.conf.set(keys[2], s3.endpoint.replace("http://", ""))  # as S3A takes it: host:port
    spark.conf.set(keys[3], "true")
    spark.conf.set(keys[4], "false")
    yield
    for k in keys:
        spark.conf.unset(k)


@pytest.mark.parametrize("table", [t for t in TABLES if os.path.isdir(os.path.join(DATA, t))])
def test_dk_reads_s3a_as_delta_spark_reads_the_local_copy(spark, s3, s3a_conf, table):
    local = os.path.join(DATA, table)
    for scheme in ("s3a", "s3") if table == TABLES[0] else ("s3a",):
        uri = f"{scheme}://{s3.bucket}/corpus/{table}"
        assert_same(spark.read.format("dk").load(uri), spark.read.format("delta").load(local),
                    f"{table} over {scheme}://")
    uri = f"s3a://{s3.bucket}/corpus/{table}"
    dk_df = spark.read.format("dk").load(uri)
    col = dk_df.schema.fields[0].name
    assert_same(dk_df.where(f"`{col}` IS NOT NULL"),
                spark.read.format("delta").load(local).where(f"`{col}` IS NOT NULL"),
                f"{table} filtered")
    assert_same(spark.read.format("dk").option("versionAsOf", 0).load(uri),
                spark.read.format("delta").option("versionAsOf", 0).load(local), f"{table} v0")


def test_wrong_credentials_fail_cleanly(spark, s3, s3a_conf):
    spark.conf.set("spark.hadoop.fs.s3a.secret.key", "wrong")
    with pytest.raises(Exception, match="HTTP 403"):  # versionAsOf: past the snapshot cache
        spark.read.format("dk").option("versionAsOf", 0).load(
            f"s3a://{s3.bucket}/corpus/{TABLES[2]}").collect()


def test_table_existence_is_asked_of_libdk_storage(spark, s3, s3a_conf, tmp_path):
    """Whether a table exists (DkCatalog.tableExists / loadTable, format("dk")'s choice between
    creating and loading) is answered by libdk through the table's own storage (one JNI call:
    the log lists a commit or checkpoint), the same over s3a:// as locally; locally
    delta-spark's DeltaTable.isDeltaTable agrees."""
    from delta.tables import DeltaTable
    s3.client().put_object(Bucket=s3.bucket, Key="junk/_delta_log/README", Body=b"x")
    junk = tmp_path / "junk" / "_delta_log"
    junk.mkdir(parents=True)
    (junk / "README").write_text("x")
    for uri, want in {f"s3a://{s3.bucket}/corpus/{TABLES[2]}": True,
                      f"s3a://{s3.bucket}/missing/t": False,
                      f"s3a://{s3.bucket}/junk": False}.items():
        assert spark.catalog.tableExists(f"dk.`{uri}`") == want, uri
    for path in (os.path.join(DATA, TABLES[2]), str(tmp_path / "junk"), str(tmp_path / "none")):
        assert spark.catalog.tableExists(f"dk.`{path}`") == DeltaTable.isDeltaTable(spark, path), path
