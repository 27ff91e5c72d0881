"""Writes to Delta tables on the S3 server, both ways, with delta-rs (deltalake over its own
S3 client, object_store, storage_options pointed at the same server) as the oracle:

  * dk writes (dk.write_table: create, appends past the checkpoint interval, replaceWhere and
    dynamic overwrites; dk.Table.checkpoint; `dk create/write/checkpoint` with
    --storage-option) and delta-rs reads every version — also from dk's checkpoint alone,
    once the commits before it are deleted; every commit was a conditional PUT
    (If-None-Match: *), seen by the test proxy;
  * delta-rs writes (create, append, overwrite, delete, its own checkpoint) and dk reads every
    version as delta-rs does; then dk appends and delta-rs reads that;
  * dk and delta-rs append to one table concurrently (both commit with conditional PUTs):
    every append lands at its own version, no row lost;
  * a server that does not honour conditional PUTs makes dk.write_table fail with a clear
    error and leaves the table as it was (no commit; the data file written before the commit
    stays as an orphan, as with Spark and delta-rs); the unsafe mode, chosen, commits."""

from __future__ import annotations

import multiprocessing as mp
import os
import re
import subprocess

import pytest

import dkharness as h
from s3env import Rule
from test_py_support import import_dk

dk = import_dk()
pa = pytest.importorskip("pyarrow")
deltalake = pytest.importorskip("deltalake")

COMMIT_RE = re.compile(r"/_delta_log/\d{20}\.json$")


def _so(srv, endpoint=None):
    """Storage options both dk and delta-rs take (delta-rs's names)."""
    return {"aws_access_key_id": srv.access_key, "aws_secret_access_key": srv.secret_key,
            "aws_endpoint_url": endpoint or srv.endpoint, "aws_region": "us-east-1",
            "aws_allow_http": "true"}


def _rows(table) -> list:
    """The rows as tuples of the columns in name order, sorted."""
    t = pa.table(table)
    return sorted(zip(*[t.column(c).to_pylist() for c in sorted(t.column_names)]))


def _rs_rows(uri, so, version=None):
    dt = deltalake.DeltaTable(uri, storage_options=so, version=version)
    return _rows(dt.to_pyarrow_table())


def _dk_rows(uri, so, version=None):
    t = dk.Table(uri, storage_options=so)
    s = t.snapshot(version=version) if version is not None else t.snapshot()
    return _rows(s.scan())


def _keys(srv, prefix):
    c = srv.client()
    out, token = [], None
    while True:
        kw = {"ContinuationToken": token} if token else {}
        r = c.list_objects_v2(Bucket=srv.bucket, Prefix=prefix.lstrip("/") + "/", **kw)
        out += [o["Key"] for o in r.get("Contents", [])]
        if not r.get("IsTruncated"):
            return sorted(out)
        token = r["NextContinuationToken"]


def _batch(ids, p):
    return pa.table({"id": pa.array(ids, pa.int64()), "p": pa.array([p] * len(ids)),
                     "v": pa.array([f"r{i}" for i in ids])})


def test_dk_writes_delta_rs_reads(s3_server, s3_prefix, fault_proxy):
    uri = f"s3://{s3_server.bucket}{s3_prefix}/t"
    so = _so(s3_server, fault_proxy.endpoint)  # dk goes through the proxy, which logs
    rs = _so(s3_server)
    expected = {}
    rows = []
    r = dk.write_table(uri, _batch([0, 1], "a"), partition_by=["p"], storage_options=so,
                       properties={"delta.checkpointInterval": "2"})
    rows += _rows(_batch([0, 1], "a"))
    expected[r["version"]] = sorted(rows)
    checkpoints = 0
    for i in range(2, 5):
        b = _batch([2 * i, 2 * i + 1], "ab"[i % 2])
        r = dk.write_table(uri, b, mode="append", storage_options=so)
        rows += _rows(b)
        expected[r["version"]] = sorted(rows)
        checkpoints += r["checkpoint"]
    assert checkpoints >= 1, "checkpointInterval=2 over 4 commits wrote no checkpoint"
    # replaceWhere: partition a replaced by new rows
    b = _batch([100, 101], "a")
    r = dk.write_table(uri, b, mode="overwrite", predicate="p = 'a'", storage_options=so)
    rows = sorted([x for x in rows if x[1] != "a"] + _rows(b))
    expected[r["version"]] = rows
    # dynamic partition overwrite of partition b
    b = _batch([200], "b")
    r = dk.write_table(uri, b, mode="overwrite", partition_overwrite="dynamic", storage_options=so)
    rows = sorted([x for x in rows if x[1] != "b"] + _rows(b))
    expected[r["version"]] = rows
    last = r["version"]
    assert sorted(expected) == list(range(last + 1))
    for v, want in expected.items():
        assert _rs_rows(uri, rs, v) == want, v
    # every commit was a conditional PUT; none replaced anything
    commits = [e for e in fault_proxy.requests("PUT") if COMMIT_RE.search(e["target"].split("?")[0])]
    assert len(commits) == last + 1
    assert all(e["headers"].get("if-none-match") == "*" for e in commits), commits
    # an explicit checkpoint of the latest version, then the log before it deleted: delta-rs
    # and dk both rebuild the table from dk's checkpoint alone
    cp = dk.Table(uri, storage_options=so).checkpoint()
    assert cp["version"] == last, cp
    c = s3_server.client()
    log = [k for k in _keys(s3_server, f"{s3_prefix}/t/_delta_log")]
    assert any(k.endswith(f"{last:020d}.checkpoint.parquet") for k in log), log
    for k in log:
        m = re.search(r"/(\d{20})\.(json|checkpoint\.parquet|crc)$", k)
        if m and int(m.group(1)) < last:
            c.delete_object(Bucket=s3_server.bucket, Key=k)
    assert _rs_rows(uri, rs) == rows
    assert _dk_rows(uri, rs) == rows
    assert deltalake.DeltaTable(uri, storage_options=rs).version() == last


def test_delta_rs_writes_dk_reads(s3_server, s3_prefix):
    uri = f"s3://{s3_server.bucket}{s3_prefix}/t"
    so = _so(s3_server)
    w = deltalake.write_deltalake
    w(uri, _batch([0, 1, 2], "a"), partition_by=["p"], storage_options=so)
    w(uri, _batch([3, 4], "b"), mode="append", storage_options=so)
    w(uri, _batch([5], "c"), mode="append", storage_options=so)
    dt = deltalake.DeltaTable(uri, storage_options=so)
    dt.delete("id = 1")
    w(uri, _batch([6, 7], "b"), mode="overwrite", predicate="p = 'b'", storage_options=so)
    dt = deltalake.DeltaTable(uri, storage_options=so)
    dt.create_checkpoint()
    last = dt.version()
    assert last >= 4
    for v in range(last + 1):
        assert _dk_rows(uri, so, v) == _rs_rows(uri, so, v), v
    snap = dk.Table(uri, storage_options=so).snapshot()
    assert sorted(f["path"] for f in snap.files()) == sorted(
        u[len(uri) + 1:] for u in deltalake.DeltaTable(uri, storage_options=so).file_uris())
    # dk appends to delta-rs's table; delta-rs reads it
    r = dk.write_table(uri, _batch([8], "c"), mode="append", storage_options=so)
    assert r["version"] == last + 1
    assert _rs_rows(uri, so) == _dk_rows(uri, so) and (8, "c", "r8") in _rs_rows(uri, so)


def test_cli_writes_on_s3(s3_server, s3_prefix, tmp_path):
    import pyarrow.parquet as pq
    uri = f"s3://{s3_server.bucket}{s3_prefix}/t"
    flags = [x for k, v in _so(s3_server).items() for x in ("--storage-option", f"{k}={v}")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["HOME"] = "/nonexistent"

    def dkc(*args):
        r = subprocess.run([str(h.dk_binary()), *args, *flags], capture_output=True, text=True,
                           env=env, timeout=120)
        h.check_process([h.dk_binary(), *args], r.returncode, r.stderr)
        assert r.returncode == 0, (args, r.stderr)
        return r.stdout

    dkc("create", uri, "--schema", "id long, p string, v string", "--partition-by", "p")
    files = []
    for i in range(3):
        f = tmp_path / f"in{i}.parquet"
        pq.write_table(_batch([10 * i, 10 * i + 1], "xy"[i % 2]), f)
        files.append(str(f))
    dkc("write", uri, *files)
    out = dkc("checkpoint", uri)
    assert "checkpoint of version 1" in out, out
    want = sorted(r for f in files for r in _rows(pq.read_table(f)))
    assert _rs_rows(uri, _so(s3_server)) == want
    assert any(k.endswith("00000000000000000001.checkpoint.parquet")
               for k in _keys(s3_server, f"{s3_prefix}/t/_delta_log"))
    assert '"version":1' in dkc("describe", uri, "--json").replace(" ", "")


def _appender(kind, uri, so, w, n, q):
    import pyarrow as pa  # noqa: F811 - a spawned process
    out = []
    for s in range(n):
        b = pa.table({"w": pa.array([w], pa.int64()), "seq": pa.array([s], pa.int64())})
        if kind == "dk":
            from test_py_support import import_dk as imp
            r = imp().write_table(uri, b, mode="append", storage_options=so,
                                  commit_properties={"max_attempts": 1000})
            out.append(r["version"])
        else:
            import deltalake as dl
            dl.write_deltalake(uri, b, mode="append", storage_options=so)
            out.append(-1)
    q.put((kind, w, out))


def test_dk_and_delta_rs_append_concurrently(s3_server, s3_prefix):
    uri = f"s3://{s3_server.bucket}{s3_prefix}/t"
    so = _so(s3_server)
    n = int(os.environ.get("DK_S3_MIXED_APPENDS", "8"))
    dk.write_table(uri, pa.table({"w": pa.array([], pa.int64()), "seq": pa.array([], pa.int64())}),
                   storage_options=so)
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_appender, args=(kind, uri, so, w, n, q))
             for w, kind in enumerate(["dk", "dk", "rs", "rs"])]
    for p in procs:
        p.start()
    results = [q.get(timeout=600) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    dk_versions = [v for kind, _, vs in results if kind == "dk" for v in vs]
    assert len(set(dk_versions)) == len(dk_versions), "two dk appends at one version"
    rs = deltalake.DeltaTable(uri, storage_options=so)
    assert rs.version() == 4 * n, "each append at its own version, no gap"
    want = sorted((s, w) for w in range(4) for s in range(n))  # columns by name: seq, w
    assert _rs_rows(uri, so) == want
    assert _dk_rows(uri, so) == want
    ops = [hh["operation"] for hh in rs.history()]
    assert len(ops) == 4 * n + 1


def test_ignored_conditional_put_fails_cleanly(s3_server, s3_prefix, fault_proxy):
    uri = f"s3://{s3_server.bucket}{s3_prefix}/t"
    dk.write_table(uri, _batch([1], "a"), partition_by=["p"], storage_options=_so(s3_server))
    before = _keys(s3_server, f"{s3_prefix}/t")
    # a server that answers every conditional PUT with 200 without looking
    fault_proxy.add(Rule("ok", method="PUT", header=r"^if-none-match: \*$"))
    with pytest.raises(dk.UnsupportedFeature, match="does not honour"):
        dk.write_table(uri, _batch([2], "b"), mode="append",
                       storage_options=_so(s3_server, fault_proxy.endpoint))
    after = _keys(s3_server, f"{s3_prefix}/t")
    log = [k for k in after if "/_delta_log/" in k]
    assert log == [k for k in before if "/_delta_log/" in k], "the failed write changed the log"
    # the data file written before the commit failed stays behind, referenced by no version
    # (as Spark and delta-rs leave theirs; VACUUM removes such files)
    assert all(k.endswith(".parquet") and "/p=b/" in k for k in set(after) - set(before))
    assert _dk_rows(uri, _so(s3_server)) == _rows(_batch([1], "a"))
    assert _rs_rows(uri, _so(s3_server)) == _rows(_batch([1], "a"))
    # the unsafe mode, chosen explicitly, commits (HEAD then a plain PUT)
    r = dk.write_table(uri, _batch([2], "b"), mode="append",
                       storage_options=dict(_so(s3_server, fault_proxy.endpoint),
                                            aws_s3_allow_unsafe_rename="true"))
    assert r["version"] == 1 and _rs_rows(uri, _so(s3_server)) == sorted(
        _rows(_batch([1], "a")) + _rows(_batch([2], "b")))
