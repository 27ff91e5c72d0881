"""The S3 storage backend (src/storage/s3) against a real S3 server (SeaweedFS, started by
scripts/s3_server.sh through the s3_server fixture), every vtable operation through
build/dk_s3_tool. Oracles: boto3 (what the server holds, what it lists), pyarrow's
S3FileSystem (reads what dk wrote; writes what dk reads) and botocore's SigV4 signer (the
signature dk's requests carry with session credentials)."""

from __future__ import annotations

import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from s3env import FaultProxy, Rule, run_tool, tool_binary  # noqa: F401


def _key(path: str) -> str:
    return path.lstrip("/")


def _put_many(client, bucket, keys, body=b"x"):
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda k: client.put_object(Bucket=bucket, Key=k, Body=body), keys))


# ---- whole objects --------------------------------------------------------------------------

def test_write_read_stat_remove(s3_server, s3_prefix, tmp_path):
    c, o = s3_server.client(), s3_server.options()
    data = os.urandom(100_000)
    src = tmp_path / "in"
    src.write_bytes(data)
    path = f"{s3_prefix}/dir/obj.bin"
    assert run_tool("put", path, src, opts=o)["status"] == "ok"
    got = c.get_object(Bucket=s3_server.bucket, Key=_key(path))
    assert got["Body"].read() == data  # the server holds exactly dk's bytes
    out = tmp_path / "out"
    r = run_tool("get", path, out, opts=o)
    assert r["status"] == "ok" and out.read_bytes() == data
    st = run_tool("stat", path, opts=o)
    head = c.head_object(Bucket=s3_server.bucket, Key=_key(path))
    assert st["status"] == "ok" and st["size"] == head["ContentLength"] == len(data)
    assert st["dir"] == 0
    assert abs(st["mtime_ms"] / 1000 - head["LastModified"].timestamp()) < 2
    d = run_tool("stat", f"{s3_prefix}/dir", opts=o)  # a prefix of keys is a directory
    assert d["status"] == "ok" and d["dir"] == 1
    # boto3's object read by dk; empty objects
    c.put_object(Bucket=s3_server.bucket, Key=_key(f"{s3_prefix}/empty"), Body=b"")
    r = run_tool("get", f"{s3_prefix}/empty", out, opts=o)
    assert r["status"] == "ok" and r["len"] == 0
    # remove, then every operation says "not found" and names the key
    assert run_tool("rm", path, opts=o)["status"] == "ok"
    with pytest.raises(c.exceptions.ClientError):
        c.head_object(Bucket=s3_server.bucket, Key=_key(path))
    for cmd in (["rm", path], ["stat", path], ["get", path, out], ["range", path, 0, 10, out]):
        r = run_tool(*cmd, opts=o)
        assert r["status"] == "not found", (cmd, r)
        assert f"s3://{s3_server.bucket}/{_key(path)}" in r["error"], r
    r = run_tool("get", path, out, opts=o)
    assert "HTTP 404" in r["error"] and "NoSuchKey" in r["error"], r


def test_write_replaces(s3_server, s3_prefix, tmp_path):
    c, o = s3_server.client(), s3_server.options()
    for body in (b"first version", b"second"):
        (tmp_path / "in").write_bytes(body)
        assert run_tool("put", f"{s3_prefix}/k", tmp_path / "in", opts=o)["status"] == "ok"
    assert c.get_object(Bucket=s3_server.bucket, Key=_key(f"{s3_prefix}/k"))["Body"].read() == b"second"


def test_keys_with_special_characters(s3_server, s3_prefix, tmp_path):
    """Keys are percent-encoded in the URL and the signature (SigV4 canonical form)."""
    c, o = s3_server.client(), s3_server.options()
    names = ["a b.json", "x=1&y=2", "part=ü/é.parquet", "col%3D5/file+plus", "tilde~_-.txt"]
    for n in names:
        (tmp_path / "in").write_bytes(n.encode())
        r = run_tool("put", f"{s3_prefix}/{n}", tmp_path / "in", opts=o)
        assert r["status"] == "ok", (n, r)
        assert c.get_object(Bucket=s3_server.bucket, Key=_key(f"{s3_prefix}/{n}"))["Body"].read() == n.encode()
    listed = run_tool("ls", s3_prefix, opts=o)
    assert listed["status"] == "ok", listed
    got = sorted(e["path"][len(s3_prefix) + 1:] for e in listed["entries"])
    want = sorted({n.split("/")[0] for n in names})
    assert got == want


# ---- listing ----------------------------------------------------------------------------------

def _boto_names(c, bucket, prefix):
    names, token = [], None
    while True:
        kw = dict(Bucket=bucket, Prefix=prefix, Delimiter="/")
        if token:
            kw["ContinuationToken"] = token
        page = c.list_objects_v2(**kw)
        names += [(o["Key"][len(prefix):], 0) for o in page.get("Contents", [])]
        names += [(p["Prefix"][len(prefix):].rstrip("/"), 1) for p in page.get("CommonPrefixes", [])]
        if not page.get("IsTruncated"):
            return names
        token = page["NextContinuationToken"]


def test_list_pagination_and_start(s3_server, s3_prefix):
    c = s3_server.client()
    d = f"{s3_prefix}/_delta_log"
    keys = [f"{_key(d)}/{v:020d}.json" for v in range(1105)]
    keys += [f"{_key(d)}/_sidecars/a.parquet", f"{_key(d)}/_last_checkpoint",
             f"{_key(d)}/00000000000000000010.checkpoint.parquet"]
    _put_many(c, s3_server.bucket, keys)
    oracle = sorted(_boto_names(c, s3_server.bucket, _key(d) + "/"), key=lambda e: e[0] + ("/" if e[1] else ""))
    assert len(oracle) == 1108
    for page in (None, 97):  # the server's 1000 a page, and many small pages
        opts = s3_server.options(**({"dk_s3_list_page_size": page} if page else {}))
        r = run_tool("ls", d, opts=opts)
        assert r["status"] == "ok", r
        got = [(e["path"][len(d) + 1:], e["dir"]) for e in r["entries"]]
        assert got == oracle
        assert all(e["path"].startswith(d + "/") for e in r["entries"])
        assert r["stats"]["requests"] == (2 if page is None else -(-1108 // 97))
        # names >= start (inclusive, byte order), whatever the start looks like
        for start in ("00000000000000000010.json", "00000000000000000010", "00000000000000001000.json",
                      "0000000000000000099", "_", "zzz", "00000000000000000010.checkpoint.parquet"):
            r = run_tool("ls", d, start, opts=opts)
            assert r["status"] == "ok", r
            got = [e["path"][len(d) + 1:] for e in r["entries"]]
            assert got == [n for n, _ in oracle if n >= start], start
    sizes = {e["path"]: e["size"] for e in run_tool("ls", d, opts=s3_server.options())["entries"]}
    assert sizes[f"{d}/00000000000000000003.json"] == 1


def test_list_missing_and_empty(s3_server, s3_prefix):
    o = s3_server.options()
    r = run_tool("ls", f"{s3_prefix}/nothing-here", opts=o)
    assert r["status"] == "not found" and "no such directory" in r["error"], r
    c = s3_server.client()
    c.put_object(Bucket=s3_server.bucket, Key=_key(f"{s3_prefix}/d/") , Body=b"")  # a directory marker
    c.put_object(Bucket=s3_server.bucket, Key=_key(f"{s3_prefix}/d/a"), Body=b"1")
    r = run_tool("ls", f"{s3_prefix}/d", opts=o)
    assert [e["path"] for e in r["entries"]] == [f"{s3_prefix}/d/a"], r
    r = run_tool("ls", f"{s3_prefix}/d", "b", opts=o)  # nothing at or after "b", but d exists
    assert r["status"] == "ok" and r["entries"] == [], r


# ---- ranges -----------------------------------------------------------------------------------

def test_read_range_and_ranges(s3_server, s3_prefix, tmp_path, fault_proxy):
    c = s3_server.client()
    data = os.urandom(3 * 1024 * 1024 + 123)
    path = f"{s3_prefix}/big.bin"
    c.put_object(Bucket=s3_server.bucket, Key=_key(path), Body=data)
    o = s3_server.options(endpoint=fault_proxy.endpoint)
    out = tmp_path / "out"
    for off, n in ((0, 1), (0, len(data)), (len(data) - 8, 8), (1_000_000, 65_536), (5, 0)):
        r = run_tool("range", path, off, n, out, opts=o)
        assert r["status"] == "ok", r
        assert out.read_bytes() == data[off:off + n]
    for off, n in ((len(data) - 4, 8), (len(data), 1), (len(data) + 100, 5)):
        r = run_tool("range", path, off, n, out, opts=o)
        assert r["status"] == "corrupt", (off, n, r)
        assert "file ends at byte" in r["error"] and f"[{off}, {off + n})" in r["error"], r
    # batched: overlapping, adjacent, zero-length, out of order, far apart
    ranges = [(100, 50), (120, 100), (220, 10), (0, 0), (3_000_000, 4096), (40, 10),
              (1_500_000, 1), (len(data) - 1, 1)]
    args = [f"{a}:{b}" for a, b in ranges]
    for gap, want_gets in ((None, 3), ("1", 5), ("16MiB", 1)):
        fault_proxy.clear()
        opts = dict(o, **({"dk_s3_coalesce_gap": gap} if gap else {}))
        r = run_tool("ranges", path, out, *args, opts=opts)
        assert r["status"] == "ok", r
        assert out.read_bytes() == b"".join(data[a:a + b] for a, b in ranges)
        gets = fault_proxy.requests("GET")
        assert len(gets) == want_gets == r["stats"]["gets"], (gap, [g["headers"].get("range") for g in gets])
    r = run_tool("ranges", path, out, "10:5", f"{len(data) - 2}:10", opts=o)
    assert r["status"] == "corrupt", r


def test_ranges_issued_concurrently(s3_server, s3_prefix, tmp_path):
    """Eight far-apart ranges, each GET held 0.6 s by a proxy: concurrent GETs take ~0.6 s,
    one after another would take ~4.8 s."""
    c = s3_server.client()
    data = os.urandom(8 * 1024 * 1024)
    path = f"{s3_prefix}/conc.bin"
    c.put_object(Bucket=s3_server.bucket, Key=_key(path), Body=data)
    ranges = [(i * 1024 * 1024, 1000) for i in range(8)]
    delay_proxy = _DelayProxy(s3_server.endpoint, 0.6)
    try:
        o = s3_server.options(endpoint=delay_proxy.endpoint, dk_s3_coalesce_gap="1")
        r = run_tool("ranges", path, tmp_path / "out", *[f"{a}:{b}" for a, b in ranges], opts=o)
    finally:
        delay_proxy.close()
    assert r["status"] == "ok", r
    assert (tmp_path / "out").read_bytes() == b"".join(data[a:a + b] for a, b in ranges)
    assert r["stats"]["gets"] == 8
    assert r["seconds"] < 3.0, f"8 delayed GETs took {r['seconds']} s: not concurrent"


class _DelayProxy(FaultProxy):
    """A FaultProxy whose every request waits `delay` seconds before being forwarded."""

    def __init__(self, upstream, delay):
        super().__init__(upstream)
        self.delay = delay
        handler = self.server.RequestHandlerClass
        orig = handler._any

        def slow(h):
            time.sleep(delay)
            return orig(h)
        handler.do_GET = slow


# ---- multipart and streamed writes -------------------------------------------------------------

def test_multipart_write_and_stream(s3_server, s3_prefix, tmp_path, fault_proxy):
    c = s3_server.client()
    o = s3_server.options(endpoint=fault_proxy.endpoint, dk_s3_part_size="5MiB")
    data = os.urandom(12 * 1024 * 1024 + 7)
    (tmp_path / "in").write_bytes(data)
    path = f"{s3_prefix}/mp.bin"
    r = run_tool("put", path, tmp_path / "in", opts=o)
    assert r["status"] == "ok", r
    assert len(fault_proxy.requests("POST", r"\?uploads=")) == 1
    parts = fault_proxy.requests("PUT", r"partNumber=")
    assert sorted(p["body_len"] for p in parts) == [2 * 1024 * 1024 + 7, 5 << 20, 5 << 20]
    assert c.get_object(Bucket=s3_server.bucket, Key=_key(path))["Body"].read() == data
    assert c.head_object(Bucket=s3_server.bucket, Key=_key(path))["ETag"].endswith('-3"')
    # streamed in odd chunks
    for chunk in (1_000_003, 7 << 20, 64):
        p2 = f"{s3_prefix}/stream-{chunk}.bin"
        body = data if chunk != 64 else data[:300_000]  # small: one PUT
        (tmp_path / "in2").write_bytes(body)
        fault_proxy.clear()
        r = run_tool("stream", p2, tmp_path / "in2", chunk, "commit", opts=o)
        assert r["status"] == "ok", r
        assert c.get_object(Bucket=s3_server.bucket, Key=_key(p2))["Body"].read() == body
        assert bool(fault_proxy.requests("POST", r"\?uploads=")) == (len(body) > 5 << 20)
    # abort: nothing visible, no upload left behind
    p3 = f"{s3_prefix}/aborted.bin"
    r = run_tool("stream", p3, tmp_path / "in", 1 << 20, "abort", opts=o)
    assert r["status"] == "ok", r
    with pytest.raises(c.exceptions.ClientError):
        c.head_object(Bucket=s3_server.bucket, Key=_key(p3))
    ups = c.list_multipart_uploads(Bucket=s3_server.bucket, Prefix=_key(s3_prefix)).get("Uploads", [])
    assert ups == [], ups
    # a multipart commit-if-absent onto an existing key: conflict, the old object stays
    r = run_tool("stream", path, tmp_path / "in2", 1 << 20, "commit-if-absent", opts=o)
    assert r["status"] == "conflict", r
    assert c.get_object(Bucket=s3_server.bucket, Key=_key(path))["Body"].read() == data
    ups = c.list_multipart_uploads(Bucket=s3_server.bucket, Prefix=_key(s3_prefix)).get("Uploads", [])
    assert ups == [], ups


# ---- put-if-absent ------------------------------------------------------------------------------

def test_put_if_absent(s3_server, s3_prefix, tmp_path):
    c, o = s3_server.client(), s3_server.options()
    path = f"{s3_prefix}/_delta_log/00000000000000000000.json"
    (tmp_path / "a").write_bytes(b'{"commitInfo":{"a":1}}\n')
    (tmp_path / "b").write_bytes(b'{"commitInfo":{"b":2}}\n')
    assert run_tool("pia", path, tmp_path / "a", opts=o)["status"] == "ok"
    r = run_tool("pia", path, tmp_path / "b", opts=o)
    assert r["status"] == "conflict" and "already exists" in r["error"], r
    assert c.get_object(Bucket=s3_server.bucket, Key=_key(path))["Body"].read() == b'{"commitInfo":{"a":1}}\n'
    # the conditional-put check left no probe object behind
    keys = [x["Key"] for x in c.list_objects_v2(Bucket=s3_server.bucket, Prefix=_key(s3_prefix))["Contents"]]
    assert keys == [_key(path)], keys
    # streamed, small: one conditional PUT
    r = run_tool("stream", path, tmp_path / "b", 4, "commit-if-absent", opts=o)
    assert r["status"] == "conflict", r


def test_put_if_absent_thread_race(s3_server, s3_prefix):
    c, o = s3_server.client(), s3_server.options()
    for round_ in range(3):
        path = f"{s3_prefix}/_delta_log/{round_:020d}.json"
        r = run_tool("race", path, 16, opts=o)
        assert r["status"] == "ok", r
        st = [x["status"] for x in r["results"]]
        assert st.count("ok") == 1 and st.count("conflict") == 15, r["results"]
        winner = next(x["thread"] for x in r["results"] if x["status"] == "ok")
        body = c.get_object(Bucket=s3_server.bucket, Key=_key(path))["Body"].read()
        assert body == f"thread {winner}\n".encode()


def test_put_if_absent_process_race(s3_server, s3_prefix, tmp_path):
    c, o = s3_server.client(), s3_server.options(dk_s3_put_if_absent="trust")
    path = f"{s3_prefix}/_delta_log/00000000000000000001.json"
    n = 8
    cmds = []
    for i in range(n):
        (tmp_path / f"c{i}").write_bytes(f"process {i}\n".encode())
        cmd = [str(tool_binary())]
        for k, v in o.items():
            cmd += ["-o", f"{k}={v}"]
        cmds.append(cmd + ["pia", path, str(tmp_path / f"c{i}")])
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for cmd in cmds]
    import json
    results = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    st = [r["status"] for r in results]
    assert st.count("ok") == 1 and st.count("conflict") == n - 1, results
    winner = st.index("ok")
    assert c.get_object(Bucket=s3_server.bucket, Key=_key(path))["Body"].read() == f"process {winner}\n".encode()


def test_conditional_put_not_honoured(s3_server, s3_prefix, tmp_path, fault_proxy):
    """A server that ignores If-None-Match (the proxy answers such PUTs 200 itself): writing
    stops with a clear error; the unsafe mode writes anyway (HEAD, then a plain PUT)."""
    c = s3_server.client()
    fault_proxy.add(Rule("ok", method="PUT", header=r"^if-none-match: \*$"))
    o = s3_server.options(endpoint=fault_proxy.endpoint)
    path = f"{s3_prefix}/_delta_log/00000000000000000000.json"
    (tmp_path / "a").write_bytes(b"a\n")
    r = run_tool("pia", path, tmp_path / "a", opts=o)
    assert r["status"] == "unsupported", r
    assert "does not honour conditional PUTs" in r["error"] and "aws_s3_allow_unsafe_rename" in r["error"], r
    with pytest.raises(c.exceptions.ClientError):
        c.head_object(Bucket=s3_server.bucket, Key=_key(path))
    r = run_tool("pia", path, tmp_path / "a", opts=dict(o, aws_s3_allow_unsafe_rename="true"))
    assert r["status"] == "ok", r
    assert c.get_object(Bucket=s3_server.bucket, Key=_key(path))["Body"].read() == b"a\n"
    r = run_tool("pia", path, tmp_path / "a", opts=dict(o, aws_s3_allow_unsafe_rename="true"))
    assert r["status"] == "conflict", r
    # the real server honours it: the check passes and costs three requests once
    fault_proxy.clear()
    r = run_tool("pia", f"{s3_prefix}/x.json", tmp_path / "a", opts=o)
    assert r["status"] == "ok", r
    assert [q["method"] for q in fault_proxy.log] == ["PUT", "PUT", "DELETE", "PUT"], fault_proxy.log


# ---- pyarrow's S3 filesystem as a second client ------------------------------------------------

def test_pyarrow_s3fs_reads_dk_and_dk_reads_pyarrow(s3_server, s3_prefix, tmp_path):
    import pyarrow as pa
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq
    fs = pafs.S3FileSystem(access_key=s3_server.access_key, secret_key=s3_server.secret_key,
                           endpoint_override=s3_server.endpoint, scheme="http", region="us-east-1")
    o = s3_server.options()
    data = os.urandom(200_000)
    (tmp_path / "in").write_bytes(data)
    assert run_tool("put", f"{s3_prefix}/blob", tmp_path / "in", opts=o)["status"] == "ok"
    with fs.open_input_stream(f"{s3_server.bucket}/{_key(s3_prefix)}/blob") as f:
        assert f.read() == data
    t = pa.table({"x": list(range(10_000)), "s": [f"v{i}" for i in range(10_000)]})
    pq.write_table(t, f"{s3_server.bucket}/{_key(s3_prefix)}/t.parquet", filesystem=fs)
    local = tmp_path / "t.parquet"
    r = run_tool("get", f"{s3_prefix}/t.parquet", local, opts=o)
    assert r["status"] == "ok"
    assert pq.read_table(local).equals(t)
    size = local.stat().st_size
    r = run_tool("ranges", f"{s3_prefix}/t.parquet", tmp_path / "tail", f"{size - 8}:8", "0:4", opts=o)
    assert r["status"] == "ok" and (tmp_path / "tail").read_bytes() == local.read_bytes()[-8:] + b"PAR1"


# ---- credentials, configuration, errors --------------------------------------------------------

def _base_env(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["HOME"] = str(tmp_path)  # no ~/.aws of the machine
    return env


def test_credentials_from_environment(s3_server, s3_prefix, tmp_path):
    env = _base_env(tmp_path)
    env.update(s3_server.env)
    (tmp_path / "in").write_bytes(b"env")
    r = run_tool("put", f"{s3_prefix}/env", tmp_path / "in", opts={"bucket": s3_server.bucket}, env=env)
    assert r["status"] == "ok", r
    env.pop("AWS_ALLOW_HTTP")
    r = run_tool("stat", f"{s3_prefix}/env", opts={"bucket": s3_server.bucket}, env=env)
    assert r["status"] == "invalid argument" and "aws_allow_http" in r["error"], r
    env["AWS_ALLOW_HTTP"] = "true"
    env["AWS_SECRET_ACCESS_KEY"] = "wrong-secret"
    r = run_tool("stat", f"{s3_prefix}/env", opts={"bucket": s3_server.bucket}, env=env)
    assert r["status"] == "i/o error" and "HTTP 403" in r["error"], r
    assert "credentials: the environment (AWS_ACCESS_KEY_ID)" in r["error"], r
    env["AWS_ACCESS_KEY_ID"] = "no-such-key"
    r = run_tool("ls", s3_prefix, opts={"bucket": s3_server.bucket}, env=env)
    assert r["status"] == "i/o error" and "HTTP 403" in r["error"], r
    assert "InvalidAccessKeyId" in r["error"] or "AccessDenied" in r["error"], r


def test_credentials_from_profile(s3_server, s3_prefix, tmp_path):
    env = _base_env(tmp_path)
    (tmp_path / ".aws").mkdir()
    (tmp_path / ".aws" / "credentials").write_text(
        "[default]\naws_access_key_id = nobody\naws_secret_access_key = nothing\n\n"
        f"# dk's test profile\n[dktest]\naws_access_key_id = {s3_server.access_key}\n"
        f"aws_secret_access_key={s3_server.secret_key}\n")
    (tmp_path / ".aws" / "config").write_text(
        f"[profile dktest]\nregion = us-east-1\nendpoint_url = {s3_server.endpoint}\n"
        "s3 =\n  addressing_style = path\n")
    (tmp_path / "in").write_bytes(b"profile")
    opts = {"bucket": s3_server.bucket, "aws_allow_http": "true"}
    env["AWS_PROFILE"] = "dktest"
    r = run_tool("put", f"{s3_prefix}/p", tmp_path / "in", opts=opts, env=env)
    assert r["status"] == "ok", r
    del env["AWS_PROFILE"]
    r = run_tool("put", f"{s3_prefix}/p", tmp_path / "in", opts=dict(opts, aws_profile="dktest"), env=env)
    assert r["status"] == "ok", r
    # the default profile's keys are wrong; the config file gives no endpoint for it
    r = run_tool("stat", f"{s3_prefix}/p", opts=dict(opts, aws_endpoint_url=s3_server.endpoint), env=env)
    assert r["status"] == "i/o error" and "profile 'default'" in r["error"], r
    r = run_tool("stat", f"{s3_prefix}/p", opts=dict(opts, aws_profile="nope"), env=env)
    assert r["status"] == "invalid argument" and "profile 'nope' is in neither" in r["error"], r
    # explicit files, a session token from the profile: the signature covers it (botocore oracle)
    creds = tmp_path / "creds"
    creds.write_text(f"[tok]\naws_access_key_id = {s3_server.access_key}\n"
                     f"aws_secret_access_key = {s3_server.secret_key}\naws_session_token = TOKEN/abc+def==\n")
    proxy = FaultProxy(s3_server.endpoint)
    try:
        r = run_tool("stat", f"{s3_prefix}/p", env=env, opts=dict(
            opts, aws_profile="tok", dk_s3_credentials_file=str(creds),
            aws_endpoint_url=proxy.endpoint, aws_region="us-east-1"))
        req = proxy.log[0]
    finally:
        proxy.close()
    assert req["headers"]["x-amz-security-token"] == "TOKEN/abc+def=="
    _check_signature(req, proxy_host=req["headers"]["host"], key=s3_server.access_key,
                     secret=s3_server.secret_key, token="TOKEN/abc+def==")
    assert r["status"] in ("ok", "i/o error"), r  # the server may refuse a token it never issued


def _check_signature(req, proxy_host, key, secret, token):
    """Recomputes the request's SigV4 signature with botocore and compares."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    auth_hdr = req["headers"]["authorization"]
    signed = auth_hdr.split("SignedHeaders=")[1].split(",")[0].split(";")
    assert "x-amz-security-token" in signed and "x-amz-content-sha256" in signed and "host" in signed
    headers = {h: req["headers"][h] for h in signed}
    ar = AWSRequest(method=req["method"], url=f"http://{proxy_host}{req['target']}", headers=headers)
    ar.context["timestamp"] = req["headers"]["x-amz-date"]
    auth = S3SigV4Auth(Credentials(key, secret, token), "s3", "us-east-1")
    cr = auth.canonical_request(ar)
    sig = auth.signature(auth.string_to_sign(ar, cr), ar)
    assert auth_hdr.endswith(f"Signature={sig}"), (auth_hdr, cr)


def test_missing_bucket_and_bad_options(s3_server, s3_prefix, tmp_path):
    o = s3_server.options(aws_bucket="no-such-bucket-dk")
    r = run_tool("ls", "/x", opts=o)
    assert r["status"] == "not found" and "bucket 'no-such-bucket-dk' does not exist" in r["error"], r
    (tmp_path / "in").write_bytes(b"x")
    r = run_tool("put", "/x", tmp_path / "in", opts=o)
    assert r["status"] == "not found" and "NoSuchBucket" in r["error"], r
    r = run_tool("stat", "/x", opts=dict(s3_server.options(), aws_allow_http="false"))
    assert r["status"] == "invalid argument" and "plain HTTP" in r["error"], r
    r = run_tool("stat", "/x", opts={"aws_no_such_option": "1"})
    assert r["status"] == "invalid argument" and "unknown storage option" in r["error"], r
    r = run_tool("stat", "/x", opts=dict(s3_server.options(), aws_s3_locking_provider="dynamodb"))
    assert r["status"] == "unsupported" and "conditional PUTs" in r["error"], r


def test_paths_as_uris(s3_server, s3_prefix, tmp_path):
    """Table roots kept as URIs hand the backend "s3://bucket/key" paths (s3a:// too)."""
    c, o = s3_server.client(), s3_server.options()
    b = s3_server.bucket
    (tmp_path / "in").write_bytes(b"uri form")
    uri = f"s3://{b}{s3_prefix}/u/x.json"
    assert run_tool("pia", uri, tmp_path / "in", opts=o)["status"] == "ok"
    assert c.get_object(Bucket=b, Key=_key(f"{s3_prefix}/u/x.json"))["Body"].read() == b"uri form"
    r = run_tool("ls", f"s3a://{b}{s3_prefix}/u", opts=o)
    assert [e["path"] for e in r["entries"]] == [f"s3a://{b}{s3_prefix}/u/x.json"], r
    assert run_tool("stat", f"s3://{b}{s3_prefix}/u", opts=o)["dir"] == 1
    r = run_tool("get", f"s3://other-bucket{s3_prefix}/u/x.json", tmp_path / "out", opts=o)
    assert r["status"] == "invalid argument" and "is not in bucket" in r["error"], r


def test_virtual_hosted_addressing(s3_server, s3_prefix, tmp_path):
    """https://bucket.endpoint/key style: curl resolves <bucket>.localhost to loopback and the
    server (-s3.domainName=localhost) takes the bucket from the Host header."""
    c = s3_server.client()
    ep = s3_server.endpoint.replace("127.0.0.1", "localhost")
    o = s3_server.options(endpoint=ep, aws_virtual_hosted_style_request="true")
    (tmp_path / "in").write_bytes(b"virtual")
    r = run_tool("put", f"{s3_prefix}/v/a.txt", tmp_path / "in", opts=o)
    assert r["status"] == "ok", r
    assert c.get_object(Bucket=s3_server.bucket, Key=_key(f"{s3_prefix}/v/a.txt"))["Body"].read() == b"virtual"
    r = run_tool("ls", f"{s3_prefix}/v", opts=o)
    assert [e["path"] for e in r["entries"]] == [f"{s3_prefix}/v/a.txt"], r
    assert run_tool("pia", f"{s3_prefix}/v/a.txt", tmp_path / "in", opts=o)["status"] == "conflict"
