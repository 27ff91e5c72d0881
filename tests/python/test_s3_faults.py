"""Faults between dk's S3 backend and a real S3 server (SeaweedFS), injected by the test
proxy (s3env.FaultProxy): throttling, 500s, resets, truncated bodies, stalls, a server that
stops mid-write, cancellation. Each must end in a retry that succeeds or a clear error within
bounded time — never a hang, never a partial object. Oracle: boto3 (what the server holds)."""

from __future__ import annotations

import os
import threading
import time

import pytest

from s3env import FaultProxy, Rule, S3Server, run_tool  # noqa: F401


def _key(path):
    return path.lstrip("/")


@pytest.fixture
def blob(s3_server, s3_prefix):
    data = os.urandom(2 * 1024 * 1024 + 17)
    path = f"{s3_prefix}/blob.bin"
    s3_server.client().put_object(Bucket=s3_server.bucket, Key=_key(path), Body=data)
    return path, data


def test_throttling_and_5xx_are_retried(s3_server, fault_proxy, blob, tmp_path):
    path, data = blob
    o = s3_server.options(endpoint=fault_proxy.endpoint)
    out = tmp_path / "out"
    for status, code in ((503, "SlowDown"), (429, "TooManyRequests"), (500, "InternalError"),
                         (502, "BadGateway"), (400, "RequestTimeout")):
        fault_proxy.clear()
        fault_proxy.add(Rule("status", method="GET", status=status, code=code, times=3))
        r = run_tool("get", path, out, opts=o)
        assert r["status"] == "ok", (status, r)
        assert out.read_bytes() == data
        assert r["stats"]["retries"] == 3 and len(fault_proxy.requests("GET")) == 4, (status, r)
    # a PUT throttled twice
    fault_proxy.clear()
    fault_proxy.add(Rule("status", method="PUT", status=503, code="SlowDown", times=2))
    (tmp_path / "in").write_bytes(b"payload")
    r = run_tool("put", path + ".2", tmp_path / "in", opts=o)
    assert r["status"] == "ok" and r["stats"]["retries"] == 2, r
    assert s3_server.client().get_object(Bucket=s3_server.bucket, Key=_key(path + ".2"))["Body"].read() == b"payload"


def test_persistent_errors_end_clearly(s3_server, fault_proxy, blob, tmp_path):
    path, _ = blob
    o = s3_server.options(endpoint=fault_proxy.endpoint, max_retries=3)
    fault_proxy.add(Rule("status", method="GET", status=500, code="InternalError"))
    t0 = time.monotonic()
    r = run_tool("get", path, tmp_path / "out", opts=o)
    assert time.monotonic() - t0 < 20
    assert r["status"] == "i/o error", r
    for part in (f"s3://{s3_server.bucket}/{_key(path)}", "HTTP 500", "InternalError",
                 "injected by the test proxy", "after 4 tries"):
        assert part in r["error"], (part, r["error"])
    # not retried: 403 is final at once
    fault_proxy.clear()
    fault_proxy.add(Rule("status", method="GET", status=403, code="AccessDenied"))
    r = run_tool("get", path, tmp_path / "out", opts=o)
    assert r["status"] == "i/o error" and r["stats"]["retries"] == 0 and "AccessDenied" in r["error"], r


def test_resets_and_truncation(s3_server, fault_proxy, blob, tmp_path):
    path, data = blob
    o = s3_server.options(endpoint=fault_proxy.endpoint)
    out = tmp_path / "out"
    for action in ("reset", "truncate", "reset_after"):
        fault_proxy.clear()
        fault_proxy.add(Rule(action, method="GET", times=2))
        r = run_tool("get", path, out, opts=o)
        assert r["status"] == "ok", (action, r)
        assert out.read_bytes() == data
        assert r["stats"]["retries"] == 2, (action, r)
    # a ranged GET cut in half resumes at the first byte it lacks
    fault_proxy.clear()
    fault_proxy.add(Rule("truncate", method="GET", times=1))
    off, n = 1000, 1_500_000
    r = run_tool("range", path, off, n, out, opts=o)
    assert r["status"] == "ok" and out.read_bytes() == data[off:off + n], r
    rng = [q["headers"]["range"] for q in fault_proxy.requests("GET")]
    assert rng[0] == f"bytes={off}-{off + n - 1}"
    assert len(rng) == 2 and rng[1] == f"bytes={off + n // 2}-{off + n - 1}", rng
    # batched ranges with one GET reset: the others stand, the reset one is retried
    fault_proxy.clear()
    fault_proxy.add(Rule("reset", method="GET", times=1, skip=1))
    ranges = [(0, 100), (1_000_000, 100), (2_000_000, 100)]
    r = run_tool("ranges", path, out, *[f"{a}:{b}" for a, b in ranges],
                 opts=dict(o, dk_s3_coalesce_gap="1"))
    assert r["status"] == "ok" and out.read_bytes() == b"".join(data[a:a + b] for a, b in ranges), r
    assert r["stats"]["gets"] == 4


def test_stalls_are_bounded(s3_server, fault_proxy, blob, tmp_path):
    path, data = blob
    o = s3_server.options(endpoint=fault_proxy.endpoint, dk_s3_stall_timeout="1s", max_retries=2)
    out = tmp_path / "out"
    fault_proxy.add(Rule("stall", method="GET", delay=30, times=1))
    t0 = time.monotonic()
    r = run_tool("get", path, out, opts=o)
    assert r["status"] == "ok" and out.read_bytes() == data, r
    assert time.monotonic() - t0 < 10
    # a body that stops after one byte, then a server that never answers
    fault_proxy.clear()
    fault_proxy.add(Rule("slow_body", method="GET", delay=30, times=1))
    r = run_tool("get", path, out, opts=o)
    assert r["status"] == "ok" and out.read_bytes() == data, r
    fault_proxy.clear()
    fault_proxy.add(Rule("stall", method="GET", delay=60))
    t0 = time.monotonic()
    r = run_tool("get", path, out, opts=o)
    took = time.monotonic() - t0
    assert r["status"] == "i/o error" and "after 3 tries" in r["error"], r
    assert took < 15, took
    # whole-request timeout
    r = run_tool("get", path, out, opts=dict(o, timeout="1500ms", dk_s3_stall_timeout="30s", max_retries=1))
    assert r["status"] == "i/o error" and "after 2 tries" in r["error"], r


def test_cancellation(s3_server, fault_proxy, blob, tmp_path):
    path, _ = blob
    fault_proxy.add(Rule("stall", method="GET", delay=60))
    t0 = time.monotonic()
    r = run_tool("get", path, tmp_path / "out", opts=s3_server.options(endpoint=fault_proxy.endpoint),
                 cancel_after_ms=700)
    assert r["status"] == "cancelled", r
    assert time.monotonic() - t0 < 5


def test_ambiguous_conditional_put(s3_server, fault_proxy, s3_prefix, tmp_path):
    """The first conditional PUT reaches the server (the object is created) but its answer is
    lost: the retry's 412 is our own success, told apart from a rival's by reading back."""
    c = s3_server.client()
    o = s3_server.options(endpoint=fault_proxy.endpoint, dk_s3_put_if_absent="trust")
    path = f"{s3_prefix}/_delta_log/00000000000000000005.json"
    (tmp_path / "mine").write_bytes(b'{"commitInfo":{"txnId":"mine"}}\n')
    fault_proxy.add(Rule("reset_after", method="PUT", header=r"^if-none-match", times=1))
    r = run_tool("pia", path, tmp_path / "mine", opts=o)
    assert r["status"] == "ok", r
    assert len(fault_proxy.requests("PUT")) == 2
    assert c.get_object(Bucket=s3_server.bucket, Key=_key(path))["Body"].read() == (tmp_path / "mine").read_bytes()
    # a rival's commit is there already and our answer is lost: a conflict, not a success
    path2 = f"{s3_prefix}/_delta_log/00000000000000000006.json"
    c.put_object(Bucket=s3_server.bucket, Key=_key(path2), Body=b'{"commitInfo":{"txnId":"rival"}}\n')
    fault_proxy.clear()
    fault_proxy.add(Rule("reset_after", method="PUT", header=r"^if-none-match", times=1))
    r = run_tool("pia", path2, tmp_path / "mine", opts=o)
    assert r["status"] == "conflict", r
    # 409 ConditionalRequestConflict is retried
    fault_proxy.clear()
    fault_proxy.add(Rule("status", method="PUT", status=409, code="ConditionalRequestConflict", times=2))
    r = run_tool("pia", f"{s3_prefix}/_delta_log/00000000000000000007.json", tmp_path / "mine", opts=o)
    assert r["status"] == "ok" and r["stats"]["retries"] == 2, r


def test_multipart_failures_leave_nothing(s3_server, fault_proxy, s3_prefix, tmp_path):
    c = s3_server.client()
    o = s3_server.options(endpoint=fault_proxy.endpoint, dk_s3_part_size="5MiB", max_retries=2)
    data = os.urandom(11 * 1024 * 1024)
    (tmp_path / "in").write_bytes(data)
    path = f"{s3_prefix}/mp-fail.bin"
    fault_proxy.add(Rule("status", method="PUT", match=r"partNumber=2&", status=500, code="InternalError"))
    r = run_tool("put", path, tmp_path / "in", opts=o)
    assert r["status"] == "i/o error" and "UploadPart" in r["error"], r
    assert fault_proxy.requests("DELETE", r"uploadId="), "the upload was not aborted"
    with pytest.raises(c.exceptions.ClientError):
        c.head_object(Bucket=s3_server.bucket, Key=_key(path))
    assert c.list_multipart_uploads(Bucket=s3_server.bucket, Prefix=_key(s3_prefix)).get("Uploads", []) == []
    # CompleteMultipartUpload answering 200 with an <Error> inside (S3 does): retried
    fault_proxy.clear()
    fault_proxy.add(Rule("status", method="POST", match=r"\?uploadId=", status=200, code="InternalError", times=1))
    r = run_tool("stream", path, tmp_path / "in", 3 << 20, "commit", opts=o)
    assert r["status"] == "ok", r
    assert len(fault_proxy.requests("POST", r"\?uploadId=")) == 2
    assert c.get_object(Bucket=s3_server.bucket, Key=_key(path))["Body"].read() == data


def test_server_down_and_stopped_mid_write(tmp_path):
    """Connection refused: retried, then a clear error. A server stopped during a multipart
    upload: the write fails and, once the server is back, nothing is under the name."""
    srv = S3Server(tmp_path / "srv").start()
    try:
        base = srv.options(max_retries=2, retry_timeout="3s", connect_timeout="1s")
        srv.stop()
        t0 = time.monotonic()
        r = run_tool("stat", "/x", opts=base)
        assert r["status"] == "i/o error" and "after 3 tries" in r["error"], r
        assert "onnect" in r["error"], r  # curl: "Failed to connect ... Connection refused"
        assert time.monotonic() - t0 < 15
        srv.start()
        proxy = FaultProxy(srv.endpoint)
        try:
            proxy.add(Rule("stall", method="PUT", match=r"partNumber=2&", delay=4, times=1))
            data = os.urandom(12 * 1024 * 1024)
            (tmp_path / "in").write_bytes(data)
            o = srv.options(endpoint=proxy.endpoint, dk_s3_part_size="5MiB", max_retries=2,
                            retry_timeout="5s", connect_timeout="1s", dk_s3_max_connections=1)
            stopper = threading.Timer(1.5, srv.stop)
            stopper.start()
            r = run_tool("stream", "/mid/write.bin", tmp_path / "in", 1 << 20, "commit", opts=o)
            stopper.join()
            assert r["status"] == "i/o error", r
        finally:
            proxy.close()
        srv.start()
        c = srv.client()
        with pytest.raises(c.exceptions.ClientError):
            c.head_object(Bucket=srv.bucket, Key="mid/write.bin")
    finally:
        srv.stop()
