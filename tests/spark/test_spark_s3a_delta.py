"""delta-spark over s3a:// and dk on the same S3 tables, both ways (issue #17):

  * dk writes, delta-spark reads: dk (the Python binding, dk.write_table with
    storage_options) writes a partitioned table to the S3 test server — a create, appends
    across dk's checkpoint at version 10, a replaceWhere overwrite — and delta-spark, with
    hadoop-aws and the AWS SDK v2 bundle from Maven Central, reads it through S3A: every
    version asked for must hold the rows dk reads and the rows written;
  * delta-spark writes, dk reads: delta-spark over S3A creates a partitioned table with
    deletion vectors, appends, DELETEs and UPDATEs (deletion vectors on S3) and writes its
    checkpoint (version 5); dk's Python binding (storage_options) and the dk Spark connector
    (in delta-spark's session, libdk's own S3 client) read every version as delta-spark does.

On demand (DK_SPARK_S3A=1): delta-spark runs in a SparkSession of its own (s3a_reader.py; the
suite's shared session has no hadoop-aws), which costs about a minute, and the first run
fetches ~700 MB of jars into the Ivy cache. The connector jar comes from conftest
(connectors/spark/target, or DK_SPARK_JAR)."""
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

from s3env import S3Server  # noqa: E402

pytestmark = pytest.mark.skipif(os.environ.get("DK_SPARK_S3A") != "1",
                                reason="delta-spark over s3a:// runs with DK_SPARK_S3A=1")
BUCKET = "dk-s3a-oracle"


def _rows(t):
    cols = t.column_names
    return sorted(json.dumps([None if x is None else str(x) for x in row])
                  for row in zip(*(t.column(c).to_pylist() for c in cols)))


def test_delta_spark_reads_what_dk_wrote_to_s3(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import dk
    try:
        S3Server.build()
        srv = S3Server(tmp_path / "s3", bucket=BUCKET).start()
    except Exception as e:  # noqa: BLE001
        pytest.fail(f"the S3 test server could not be started: {e}")
    try:
        uri = f"s3://{BUCKET}/t"
        so = srv.options()

        def batch(lo, n, p):
            return pa.table({"id": pa.array(range(lo, lo + n), pa.int64()),
                             "s": pa.array([f"s{i}" for i in range(lo, lo + n)]),
                             "p": pa.array([p] * n, pa.int32())})

        dk.write_table(uri, batch(0, 10, 0), partition_by=["p"], storage_options=so)
        for i in range(1, 12):  # v1..v11: dk writes its checkpoint at v10
            dk.write_table(uri, batch(i * 10, 10, i % 3), mode="append", storage_options=so)
        dk.write_table(uri, batch(1000, 5, 1), mode="overwrite", predicate="p = 1",
                       storage_options=so)  # v12: replaceWhere
        t = dk.Table(uri, storage_options=so)
        versions = ["0", "5", "11", "latest"]
        want = {}
        for v in versions:
            snap = t.snapshot() if v == "latest" else t.snapshot(version=int(v))
            want[v] = _rows(pa.table(snap.scan()))
        assert t.snapshot().version == 12
        keys = [o["Key"] for o in srv.client().list_objects_v2(
            Bucket=BUCKET, Prefix="t/_delta_log/").get("Contents", [])]
        assert "t/_delta_log/00000000000000000010.checkpoint.parquet" in keys, keys
        assert len(want["11"]) == 120 and len(want["latest"]) == 120 - 40 + 5
        r = subprocess.run([sys.executable, os.path.join(HERE, "s3a_reader.py"), "read", srv.endpoint,
                            srv.access_key, srv.secret_key, f"s3a://{BUCKET}/t", *versions],
                           capture_output=True, text=True, timeout=1200)
        assert r.returncode == 0, r.stderr[-4000:]
        got = {d["version"]: d["rows"] for d in
               (json.loads(line) for line in r.stdout.splitlines() if line.startswith("{"))}
    finally:
        srv.stop()
    for v in versions:
        assert got[v] == want[v], f"version {v}: delta-spark over s3a:// and dk differ"


def test_dk_reads_what_delta_spark_wrote_to_s3(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import dk
    from conftest import connector_jar
    jar = connector_jar()
    assert jar and os.path.exists(jar), "the connector jar is not built (mvn package)"
    try:
        S3Server.build()
        srv = S3Server(tmp_path / "s3", bucket=BUCKET).start()
    except Exception as e:  # noqa: BLE001
        pytest.fail(f"the S3 test server could not be started: {e}")
    try:
        r = subprocess.run([sys.executable, os.path.join(HERE, "s3a_reader.py"), "write",
                            srv.endpoint, srv.access_key, srv.secret_key, f"s3a://{BUCKET}/rs",
                            jar], capture_output=True, text=True, timeout=1800)
        assert r.returncode == 0, r.stderr[-4000:]
        got = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
        keys = [o["Key"] for o in srv.client().list_objects_v2(
            Bucket=BUCKET, Prefix="rs/").get("Contents", [])]
        so = srv.options()
        t = dk.Table(f"s3://{BUCKET}/rs", storage_options=so)
        mine = {}
        for g in got:
            v = g["version"]
            snap = t.snapshot() if v == "latest" else t.snapshot(version=v)
            tb = pa.table(snap.scan())
            mine[v] = sorted(json.dumps([None if x is None else str(x) for x in row])
                             for row in zip(*(tb.column(c).to_pylist() for c in ("id", "s", "p"))))
        latest = t.snapshot().version
    finally:
        srv.stop()
    assert "rs/_delta_log/00000000000000000005.checkpoint.parquet" in keys, keys
    assert any("deletion_vector_" in k for k in keys), "delta-spark wrote no deletion vector"
    assert [g["op"] for g in got if g["version"] != "latest"] == [
        "CREATE TABLE", "WRITE", "WRITE", "DELETE", "WRITE", "UPDATE", "DELETE", "WRITE"]
    assert latest == 7
    assert len(got[3]["delta"]) < len(got[2]["delta"])  # the DELETE removed rows
    for g in got:
        v = g["version"]
        assert mine[v] == g["delta"], f"version {v}: dk (Python) and delta-spark differ"
        assert g["dk"] == g["delta"], f"version {v}: the dk connector and delta-spark differ"
