"""Commits to a table on the S3 server: N processes each append M times through
dk.Table("s3://...", storage_options).transaction(), racing on conditional PUTs of
_delta_log/<v>.json. Every append must land once at its own version, no gap, and delta-rs
(reading the bucket through its own S3 client) must see every row. Data files are uploaded by
boto3 (the engine writes its files; dk commits them). DK_S3_RACE_APPENDS sets M (default 25)."""
import io
import json
import multiprocessing as mp
import os

import pytest

from test_py_support import import_dk

dk = import_dk()
APPENDS = int(os.environ.get("DK_S3_RACE_APPENDS", "25"))
WRITERS = 4
SCHEMA = json.dumps({"type": "struct", "fields": [
    {"name": "w", "type": "long", "nullable": True, "metadata": {}},
    {"name": "seq", "type": "long", "nullable": True, "metadata": {}}]})


def _so(env):
    return {"aws_access_key_id": env["AWS_ACCESS_KEY_ID"],
            "aws_secret_access_key": env["AWS_SECRET_ACCESS_KEY"],
            "aws_endpoint_url": env["AWS_ENDPOINT_URL"], "aws_region": "us-east-1",
            "aws_allow_http": "true"}


def _writer(env, bucket, prefix, w, n, q):
    import boto3
    import pyarrow as pa
    import pyarrow.parquet as pq
    c = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"],
                     aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
                     aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"], region_name="us-east-1")
    t = dk.Table(f"s3://{bucket}/{prefix}", storage_options=_so(env))
    out = []
    for s in range(n):
        buf = io.BytesIO()
        pq.write_table(pa.table({"w": pa.array([w], pa.int64()), "seq": pa.array([s], pa.int64())}), buf)
        name = f"part-w{w}-s{s:05d}.parquet"
        c.put_object(Bucket=bucket, Key=f"{prefix}/{name}", Body=buf.getvalue())
        x = t.transaction(operation="WRITE", operation_parameters={"mode": "Append", "partitionBy": "[]"})
        x.add_file(name, size=len(buf.getvalue()), modification_time=1,
                   stats=json.dumps({"numRecords": 1, "minValues": {"w": w, "seq": s},
                                     "maxValues": {"w": w, "seq": s}, "nullCount": {"w": 0, "seq": 0}}))
        r = x.commit()
        out.append((w, s, r["version"], r["attempts"]))
    q.put(out)


def test_racing_appenders_on_s3(s3_server):
    prefix = f"race-{os.getpid()}"
    env = s3_server.env
    s3_server.client().put_object(Bucket=s3_server.bucket, Key=f"{prefix}/_delta_log/.keep", Body=b"")
    t = dk.Table(f"s3://{s3_server.bucket}/{prefix}", storage_options=_so(env))
    x = t.transaction(create=True, operation="CREATE TABLE",
                      operation_parameters={"isManaged": "false", "partitionBy": "[]"})
    x.set_metadata(SCHEMA, [])
    assert x.commit()["version"] == 0
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(env, s3_server.bucket, prefix, w, APPENDS, q))
             for w in range(WRITERS)]
    for p in procs:
        p.start()
    results = [r for _ in procs for r in q.get(timeout=900)]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    versions = sorted(r[2] for r in results)
    assert versions == list(range(1, WRITERS * APPENDS + 1)), "each append at its own version, no gap"
    assert max(r[3] for r in results) > 1, "no append ever lost a race: not concurrent"
    snap = dk.Table(f"s3://{s3_server.bucket}/{prefix}", storage_options=_so(env)).snapshot()
    assert snap.version == WRITERS * APPENDS and len(snap.files()) == WRITERS * APPENDS
    deltalake = pytest.importorskip("deltalake")
    rs = deltalake.DeltaTable(f"s3://{s3_server.bucket}/{prefix}", storage_options=_so(env))
    assert rs.version() == WRITERS * APPENDS
    rows = sorted(zip(*[rs.to_pyarrow_table().column(c).to_pylist() for c in ("w", "seq")]))
    assert rows == sorted((w, s) for w in range(WRITERS) for s in range(APPENDS))
