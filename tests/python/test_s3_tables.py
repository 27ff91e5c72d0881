"""Delta tables on the S3 server read through dk's table path: every table of the shared
corpus is uploaded (boto3) under s3://<bucket>/corpus/, then `dk describe --json` and
`dk files --json` of the s3:// URI must equal the same commands on the local copy; delta-rs
(deltalake with storage_options) reading the same S3 tables is the outside oracle for the
version and the active file set.

The log (listing, commits, classic/multi-part/V2 checkpoints with their sidecars,
_last_checkpoint, CRCs, log compactions) is read through the S3 backend; the rows of the same
tables are checked by every engine in test_s3_scan.py."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

import dkharness

DATA = dkharness.testdata_dir()


def _tables():
    seen = []
    for c in dkharness.load_manifest()["cases"]:
        if c["kind"] in ("read", "snapshot") and c["table"] not in seen:
            seen.append(c["table"])
    return seen


TABLES = _tables()


@pytest.fixture(scope="module")
def corpus_on_s3(s3_corpus):
    return s3_corpus


def _dk(args, env):
    r = subprocess.run([str(dkharness.dk_binary()), *args], capture_output=True, text=True,
                       env=env, timeout=120)
    dkharness.check_process([str(dkharness.dk_binary()), *args], r.returncode, r.stderr)
    return r


def _env(s3_server):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(s3_server.env)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1")
    return env


def _norm(out: str) -> dict:
    j = json.loads(out)
    j.pop("table", None)      # the root differs by construction
    j.pop("timestamp", None)  # falls back to the commit file's mtime (upload time on S3)
    return j


@pytest.mark.parametrize("table", TABLES)
def test_describe_and_files_equal_local(s3_server, corpus_on_s3, table):
    env = _env(s3_server)
    uri = f"{corpus_on_s3}/{table}"
    for cmd in ("describe", "files"):
        local = _dk([cmd, "--json", str(DATA / table)], env)
        remote = _dk([cmd, "--json", uri], env)
        assert remote.returncode == local.returncode, (cmd, local.stderr, remote.stderr)
        if local.returncode != 0:  # an unreadable table must fail the same way
            assert remote.stderr.split(":")[0] == local.stderr.split(":")[0], (local.stderr, remote.stderr)
            continue
        assert _norm(remote.stdout) == _norm(local.stdout), cmd


def test_delta_rs_reads_the_same_s3_tables(s3_server, corpus_on_s3):
    deltalake = pytest.importorskip("deltalake")
    env = _env(s3_server)
    so = {"aws_access_key_id": s3_server.access_key, "aws_secret_access_key": s3_server.secret_key,
          "aws_endpoint_url": s3_server.endpoint, "aws_region": "us-east-1",
          "aws_allow_http": "true"}
    checked = 0
    for table in TABLES:
        uri = f"{corpus_on_s3}/{table}"
        try:
            dt = deltalake.DeltaTable(uri, storage_options=so)
            rs_files = [u[len(uri) + 1:] if u.startswith(uri + "/") else u for u in dt.file_uris()]
            rs_version = dt.version()
        except Exception:  # delta-rs cannot load this one: no oracle for it
            continue
        r = _dk(["files", "--json", uri], env)
        if r.returncode != 0:
            continue
        j = json.loads(r.stdout)
        assert j["version"] == rs_version, table
        from urllib.parse import unquote
        assert sorted(unquote(f["path"]) for f in j["files"]) == sorted(unquote(p) for p in rs_files), table
        checked += 1
    assert checked >= 30, f"delta-rs loaded only {checked} corpus tables from S3"


def test_storage_option_flags_and_missing_table(s3_server, corpus_on_s3):
    base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    base["HOME"] = "/nonexistent"
    table = TABLES[0]
    opts = ["--storage-option", f"aws_endpoint_url={s3_server.endpoint}",
            "--storage-option", f"aws_access_key_id={s3_server.access_key}",
            "--storage-option", f"aws_secret_access_key={s3_server.secret_key}",
            "--storage-option", "aws_allow_http=true"]
    r = _dk(["describe", "--json", f"{corpus_on_s3}/{table}", *opts], base)
    assert r.returncode == 0, r.stderr
    assert _norm(r.stdout) == _norm(_dk(["describe", "--json", str(DATA / table)], base).stdout)
    r = _dk(["describe", f"{corpus_on_s3}/no/such/table", *opts], base)
    assert r.returncode != 0 and "not found" in r.stderr, r.stderr
    r = _dk(["describe", f"s3://no-such-bucket-dk/{table}", *opts], base)
    assert r.returncode != 0 and "not found" in r.stderr, r.stderr
    r = _dk(["describe", f"{corpus_on_s3}/{table}", *opts[:-2]], base)  # no aws_allow_http
    assert r.returncode != 0 and "aws_allow_http" in r.stderr, r.stderr
