"""dk.Table("s3://bucket/prefix", storage_options={...}) with delta-rs's option names, against
the real S3 server: snapshots of corpus tables uploaded there equal the local ones, and
delta-rs opening the same URI with the same storage_options is the outside oracle."""

from __future__ import annotations

import os

import pytest

import dkharness
from test_py_support import import_dk

dk = import_dk()
DATA = dkharness.testdata_dir()
# commits only, escaped paths, a re-added file; and checkpoints (classic, multi-part, V2 with
# sidecars), read through the S3 backend like every other log file
TABLES = ["delta-golden/snapshot-repartitioned", "delta-golden/basic-decimal-table",
          "delta-golden/data-reader-escaped-chars", "delta-golden/delete-re-add-same-file-different-transactions",
          "delta-golden/checkpoint", "delta-golden/multi-part-checkpoint",
          "delta-golden/v2-checkpoint-parquet"]


@pytest.fixture(scope="module")
def on_s3(s3_corpus):
    return s3_corpus


def _so(srv, **extra):
    o = {"aws_access_key_id": srv.access_key, "aws_secret_access_key": srv.secret_key,
         "aws_endpoint_url": srv.endpoint, "aws_region": "us-east-1", "aws_allow_http": True}
    o.update(extra)
    return o


@pytest.mark.parametrize("table", TABLES)
def test_snapshot_over_s3_equals_local(s3_server, on_s3, table):
    uri = f"{on_s3}/{table}"
    remote = dk.Table(uri, storage_options=_so(s3_server)).snapshot()
    local = dk.Table(str(DATA / table)).snapshot()
    assert remote.version == local.version
    assert remote.schema.fields == local.schema.fields
    assert remote.partition_columns == local.partition_columns
    assert remote.protocol == local.protocol
    key = lambda f: f["path"]  # noqa: E731
    assert sorted(remote.files(), key=key) == sorted(local.files(), key=key)
    assert [h["version"] for h in remote.history()] == [h["version"] for h in local.history()]
    for v in range(local.version + 1):  # time travel over S3
        assert dk.Table(uri, storage_options=_so(s3_server)).snapshot(version=v).version == v
    deltalake = pytest.importorskip("deltalake")
    rs = deltalake.DeltaTable(uri, storage_options={k: str(v).lower() if isinstance(v, bool) else v
                                                     for k, v in _so(s3_server).items()})
    assert rs.version() == remote.version
    assert sorted(u[len(uri) + 1:] for u in rs.file_uris()) == sorted(f["path"] for f in remote.files())


def test_storage_option_errors(s3_server, on_s3):
    uri = f"{on_s3}/{TABLES[0]}"
    with pytest.raises(dk.InvalidArgument, match="unknown storage option 'aws_nope'"):
        dk.Table(uri, storage_options=dict(_so(s3_server), aws_nope="1"))
    with pytest.raises(dk.InvalidArgument, match="aws_allow_http"):
        dk.Table(uri, storage_options=dict(_so(s3_server), aws_allow_http=False))
    with pytest.raises(dk.TableNotFound):
        dk.Table(f"{on_s3}/no/such/table", storage_options=_so(s3_server)).snapshot()
    bad = dk.Table(uri, storage_options=dict(_so(s3_server), aws_secret_access_key="wrong"))
    with pytest.raises(dk.DkError, match="HTTP 403"):
        bad.snapshot()
    with pytest.raises(dk.UnsupportedFeature, match="s3://"):
        dk.Table(str(DATA / TABLES[0]), storage_options={"aws_region": "x"})


def test_credentials_from_environment(s3_server, on_s3, monkeypatch):
    for k, v in s3_server.env.items():
        monkeypatch.setenv(k, v)
    snap = dk.Table(f"{on_s3}/{TABLES[0]}").snapshot()
    assert snap.version == dk.Table(str(DATA / TABLES[0])).snapshot().version
    assert os.environ["AWS_ENDPOINT_URL"] == s3_server.endpoint
