"""Spark writes s3a:// Delta tables through the dk connector (issue #17): the driver's
transaction creates or reads the table and the executors' writers write its data files through
libdk's own S3 backend (no hadoop-aws), configured from the session's S3A settings
(spark.hadoop.fs.s3a.access.key / secret.key / endpoint / path.style.access /
connection.ssl.enabled, set here at runtime), on the S3 test server (SeaweedFS,
tests/python/s3env.py) in a bucket of its own:

  * DDL through the dk catalog: CREATE TABLE (partitioned, with a table property), INSERT
    into it, CTAS;
  * DELETE, UPDATE and MERGE through the dk catalog on an s3a:// table with deletion vectors
    (which delta-rs does not read: the oracle is delta-spark running the same statements on a
    local copy, version by version);
  * df.write.format("dk").save("s3a://..."): overwrite creating the table, append, overwrite;
  * a streaming write (Trigger.AvailableNow, one source file a batch) into an s3a:// table it
    creates, restarted from its checkpoint with its last batch replayed (Spark's commit-log
    entry removed, as after a crash between dk's commit and Spark's) and new source data.

The oracles are delta-rs (deltalake, its own S3 client, storage_options) reading every version
against the rows Spark computed for it, and dk's Python binding reading the same rows."""
import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

from s3env import S3Server  # noqa: E402

deltalake = pytest.importorskip("deltalake")
BUCKET = "dk-spark-write"
S3A = ("access.key", "secret.key", "endpoint", "path.style.access", "connection.ssl.enabled")


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    try:
        S3Server.build()
        srv = S3Server(tmp_path_factory.mktemp("s3server"), bucket=BUCKET).start()
    except Exception as e:  # noqa: BLE001
        pytest.fail(f"the S3 test server could not be started: {e}")
    yield srv
    srv.stop()


@pytest.fixture
def s3a_conf(spark, s3):
    keys = [f"spark.hadoop.fs.s3a.{k}" for k in S3A]
    for k, v in zip(keys, (s3.access_key, s3.secret_key, s3.endpoint.replace("http://", ""),
                           "true", "false")):
        spark.conf.set(k, v)
    yield
    for k in keys:
        spark.conf.unset(k)


def _so(s3):
    """Storage options for delta-rs and dk's Python binding (delta-rs's names)."""
    return {"aws_access_key_id": s3.access_key, "aws_secret_access_key": s3.secret_key,
            "aws_endpoint_url": s3.endpoint, "aws_region": "us-east-1", "aws_allow_http": "true"}


def _norm(v):
    return None if v is None else str(v)


def _arrow_rows(t, cols):
    return sorted(json.dumps([_norm(x) for x in row])
                  for row in zip(*(t.column(c).to_pylist() for c in cols)))


def _spark_rows(df, cols):
    return sorted(json.dumps([_norm(r[c]) for c in cols]) for r in df.collect())


def _check(s3, key, want, cols, partitions=()):
    """delta-rs and dk read every version of s3://<bucket>/<key> as `want` (version -> rows as
    _spark_rows gives them) says; the latest version is max(want)."""
    import dk
    import pyarrow as pa
    uri = f"s3://{BUCKET}/{key}"
    so = _so(s3)
    rs = deltalake.DeltaTable(uri, storage_options=so)
    assert rs.version() == max(want), f"{key}: delta-rs sees version {rs.version()}"
    assert list(rs.metadata().partition_columns) == list(partitions)
    t = dk.Table(uri, storage_options=so)
    for v, rows in want.items():
        rs.load_as_version(v)
        assert _arrow_rows(rs.to_pyarrow_table(), cols) == rows, f"{key} v{v}: delta-rs"
        assert _arrow_rows(pa.table(t.snapshot(version=v).scan()), cols) == rows, f"{key} v{v}: dk"


def test_ddl_on_s3a(spark, s3, s3a_conf):
    cols = ["id", "s", "p"]
    ddl = f"s3a://{BUCKET}/ddl"
    spark.sql(f"CREATE TABLE dk.`{ddl}` (id BIGINT, s STRING, p INT) USING dk "
              "PARTITIONED BY (p) TBLPROPERTIES ('delta.checkpointInterval'='7')")
    spark.sql(f"INSERT INTO dk.`{ddl}` VALUES (1, 'a', 0), (2, 'b', 1), (3, NULL, 1)")
    v1 = _spark_rows(spark.sql("SELECT * FROM VALUES (1L, 'a', 0), (2L, 'b', 1), "
                               "(3L, CAST(NULL AS STRING), 1) AS t(id, s, p)"), cols)
    _check(s3, "ddl", {0: [], 1: v1}, cols, ["p"])
    rs = deltalake.DeltaTable(f"s3://{BUCKET}/ddl", storage_options=_so(s3))
    assert rs.metadata().configuration.get("delta.checkpointInterval") == "7"

    select = ("SELECT id, concat('s', CAST(id AS STRING)) AS s, CAST(id % 3 AS INT) AS p "
              "FROM range(0, 50, 1, 3)")
    spark.sql(f"CREATE TABLE dk.`s3a://{BUCKET}/ctas` USING dk PARTITIONED BY (p) AS {select}")
    _check(s3, "ctas", {0: _spark_rows(spark.sql(select), cols)}, cols, ["p"])
    # and the connector reads them back over s3a:// as delta-rs did
    assert _spark_rows(spark.read.format("dk").load(ddl), cols) == v1


def test_dml_on_s3a(spark, s3, s3a_conf, tmp_path):
    import dk
    import pyarrow as pa
    cols = ["id", "s", "p"]
    select = ("SELECT id, concat('s', CAST(id AS STRING)) AS s, CAST(id % 3 AS INT) AS p "
              "FROM range(0, 50, 1, 3)")
    props = "TBLPROPERTIES ('delta.enableDeletionVectors'='true')"
    local = str(tmp_path / "dml")
    stmts = ["DELETE FROM {t} WHERE id % 5 = 0",  # v1
             "UPDATE {t} SET s = concat(s, '-u') WHERE id % 7 = 3",  # v2
             "MERGE INTO {t} t USING (SELECT id, 'm' AS s, CAST(id % 3 AS INT) AS p "
             "FROM range(45, 55)) u ON t.id = u.id WHEN MATCHED THEN UPDATE SET s = u.s "
             "WHEN NOT MATCHED THEN INSERT *"]  # v3
    for t, using in ((f"dk.`s3a://{BUCKET}/dml`", "dk"), (f"delta.`{local}`", "delta")):
        spark.sql(f"CREATE TABLE {t} USING {using} PARTITIONED BY (p) {props} AS {select}")
        for q in stmts:
            spark.sql(q.format(t=t))
    mine = dk.Table(f"s3://{BUCKET}/dml", storage_options=_so(s3))
    assert mine.snapshot().version == len(stmts)
    for v in range(len(stmts) + 1):
        want = _spark_rows(spark.read.format("delta").option("versionAsOf", v).load(local), cols)
        got = _arrow_rows(pa.table(mine.snapshot(version=v).scan()), cols)
        assert got == want, f"dml v{v}: dk on S3 and delta-spark locally differ"
    keys = [o["Key"] for o in s3.client().list_objects_v2(Bucket=BUCKET, Prefix="dml/")
            .get("Contents", [])]
    assert any("deletion_vector_" in k for k in keys), "no deletion vector written to S3"


def test_dataframe_save_on_s3a(spark, s3, s3a_conf):
    cols = ["id", "v"]
    uri = f"s3a://{BUCKET}/df"

    def data(lo, hi):
        return spark.range(lo, hi, 1, 2).selectExpr("id", "concat('v', CAST(id AS STRING)) AS v")

    data(0, 30).write.format("dk").mode("overwrite").save(uri)   # v0: creates the table
    data(30, 45).write.format("dk").mode("append").save(uri)     # v1
    data(100, 110).write.format("dk").mode("overwrite").save(uri)  # v2
    r = lambda lo, hi: _spark_rows(data(lo, hi), cols)  # noqa: E731
    _check(s3, "df", {0: r(0, 30), 1: sorted(r(0, 30) + r(30, 45)), 2: r(100, 110)}, cols)
    rs = deltalake.DeltaTable(f"s3://{BUCKET}/df", storage_options=_so(s3))
    ops = [(h["operation"], h.get("operationParameters", {}).get("mode")) for h in rs.history()]
    assert ops == [("WRITE", "Overwrite"), ("WRITE", "Append"), ("WRITE", "Overwrite")][::-1]


def test_streaming_write_on_s3a(spark, s3, s3a_conf, tmp_path):
    src, cp = str(tmp_path / "src"), str(tmp_path / "cp")
    uri = f"s3a://{BUCKET}/stream"

    def add(lo, hi):  # one source file each
        spark.range(lo, hi, 1, 1).selectExpr("id AS value").write.format("delta") \
            .mode("append").save(src)

    def run():
        q = (spark.readStream.format("delta").option("maxFilesPerTrigger", 1).load(src)
             .writeStream.format("dk").outputMode("append").option("checkpointLocation", cp)
             .trigger(availableNow=True).start(uri))
        q.awaitTermination(300)
        assert q.exception() is None, q.exception()
        return q.id

    for lo in (0, 10, 20):
        add(lo, lo + 10)
    qid = run()
    commits = sorted(int(f) for f in os.listdir(os.path.join(cp, "commits")) if f.isdigit())
    assert len(commits) == 3, commits
    os.remove(os.path.join(cp, "commits", str(commits[-1])))  # Spark forgets its last batch
    crc = os.path.join(cp, "commits", f".{commits[-1]}.crc")
    if os.path.exists(crc):
        os.remove(crc)
    add(30, 40)
    add(40, 50)
    assert run() == qid  # the restart: the replayed batch, then two new ones
    so = _so(s3)
    rs = deltalake.DeltaTable(f"s3://{BUCKET}/stream", storage_options=so)
    hist = sorted(rs.history(), key=lambda h: h["version"])
    stream = [h for h in hist if h["operation"] == "STREAMING UPDATE"]
    epochs = [int(h["operationParameters"]["epochId"]) for h in stream]
    assert epochs == sorted(set(epochs)) and len(epochs) == 5, epochs  # the replay added none
    assert {h["operationParameters"]["queryId"] for h in stream} == {qid}
    want, rows = {}, []
    for h in stream:  # each epoch added the next source file's ten values
        rows = sorted(rows + [json.dumps([str(i)]) for i in range(len(rows), len(rows) + 10)])
        want[h["version"]] = rows
    _check(s3, "stream", want, ["value"])
