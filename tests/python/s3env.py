"""s3env — a real S3 server, a fault-injecting proxy and dk's S3 test driver for the tests.

  * ``S3Server``: SeaweedFS started through ``scripts/s3_server.sh`` (which builds it from the
    Go module proxy on first use and caches the binary) on free loopback ports and a fresh
    directory; ``stop()`` ends it. ``client()`` is a boto3 client (the oracle).
  * ``FaultProxy``: an HTTP/1.1 proxy between dk and the server. Rules (matching method,
    "path?query" and a header) decide per request: answer with an S3 error (``status``) or a
    bare 200 (``ok``: a server ignoring If-None-Match), close the connection with a reset
    before (``reset``) or after (``reset_after``) forwarding, forward and cut the body in half
    (``truncate``), send one byte then go quiet (``slow_body``), wait and close (``stall``), or
    wait and forward (``delay``). Every request is logged (method, path, query, headers,
    request and response body sizes, and for requests forwarded whole when they came and when
    their answer was sent) for assertions and for counting what a client fetched.
  * ``run_tool(...)``: runs ``build/dk_s3_tool`` (tests/storage/s3_tool.c) with storage options
    and returns its JSON; a sanitizer report or a crash fails the test.

The fixtures at the end (s3_server, s3_corpus, s3_prefix, fault_proxy) are registered once,
by conftest.py, so every module of a pytest session shares one server and one upload of the
corpus (a fixture imported into several modules would be a separate fixture in each: one
server per module).
"""

from __future__ import annotations

import http.client
import json
import os
import random
import re
import socket
import struct
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

import dkharness

SCRIPT = dkharness.REPO_ROOT / "scripts" / "s3_server.sh"


def _plain_env(**extra) -> dict:
    """The environment without a preloaded sanitizer runtime (the ASan rerun of the binding
    tests sets LD_PRELOAD=libasan; the server script, curl and weed must not inherit it)."""
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}
    env.update(extra)
    return env


def _bindable(port: int) -> bool:
    s = socket.socket()
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def free_port_base() -> int:
    """A port P with P..P+3 and P+10000..P+10003 free (weed mini takes all eight)."""
    rnd = random.Random(os.getpid() ^ time.time_ns())
    for _ in range(200):
        p = rnd.randrange(20000, 29990, 4)
        if all(_bindable(p + d) for d in (0, 1, 2, 3, 10000, 10001, 10002, 10003)):
            return p
    raise RuntimeError("no free ports for the S3 server")


class S3Server:
    def __init__(self, workdir: Path, bucket: str = "dk-test"):
        self.dir = Path(workdir)
        self.bucket = bucket
        self.port = None
        self.env = {}

    def _script(self, cmd: str, timeout: float) -> str:
        env = _plain_env(DK_S3_PORT=str(self.port or 0), DK_S3_DIR=str(self.dir),
                         DK_S3_BUCKET=self.bucket)
        r = subprocess.run([str(SCRIPT), cmd], env=env, capture_output=True, text=True,
                           timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError(f"s3_server.sh {cmd} failed:\n{r.stderr[-4000:]}")
        return r.stdout

    @staticmethod
    def build():
        r = subprocess.run([str(SCRIPT), "build"], capture_output=True, text=True, timeout=3600,
                           env=_plain_env())
        if r.returncode != 0:
            raise RuntimeError(f"s3_server.sh build failed:\n{r.stderr[-4000:]}")

    def start(self):
        if self.port is None:
            self.port = free_port_base()
        out = self._script("start", timeout=600)
        self.env = dict(re.findall(r"^export (\w+)=(.*)$", out, re.M))
        return self

    def stop(self):
        if self.port is not None:
            self._script("stop", timeout=60)

    @property
    def endpoint(self) -> str:
        return self.env["AWS_ENDPOINT_URL"]

    @property
    def access_key(self) -> str:
        return self.env["AWS_ACCESS_KEY_ID"]

    @property
    def secret_key(self) -> str:
        return self.env["AWS_SECRET_ACCESS_KEY"]

    def options(self, endpoint: str | None = None, **extra) -> dict:
        """dk storage options (delta-rs names) reaching this server, directly or via a proxy."""
        o = {"aws_endpoint_url": endpoint or self.endpoint, "aws_access_key_id": self.access_key,
             "aws_secret_access_key": self.secret_key, "aws_region": "us-east-1",
             "aws_allow_http": "true", "aws_bucket": self.bucket, "dk_s3_skip_env": "true"}
        o.update({k: str(v) for k, v in extra.items()})
        return o

    def client(self, config=None):
        import boto3
        from botocore.config import Config
        c = Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3})
        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=self.access_key,
                            aws_secret_access_key=self.secret_key, region_name="us-east-1",
                            config=c.merge(config) if config else c)


# ---------------------------------------------------------------------------------------------
# dk_s3_tool
# ---------------------------------------------------------------------------------------------

def tool_binary() -> Path:
    return dkharness.build_dir() / "dk_s3_tool"


def run_tool(*args, opts: dict | None = None, env: dict | None = None, timeout: float = 180,
             cancel_after_ms: int | None = None) -> dict:
    exe = tool_binary()
    if not exe.exists():
        pytest.fail(f"{exe} is not built (make build)")
    cmd = [str(exe)]
    for k, v in (opts or {}).items():
        cmd += ["-o", f"{k}={v}"]
    if cancel_after_ms is not None:
        cmd += ["--cancel-after", str(cancel_after_ms)]
    cmd += [str(a) for a in args]
    full_env = dict(_plain_env() if env is None else env)
    full_env.pop("LD_PRELOAD", None)
    full_env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env)
    if dkharness._SANITIZER_RE.search(r.stderr) or r.returncode < 0 or r.returncode == 134:
        pytest.fail(f"dk_s3_tool crashed or a sanitizer reported (rc {r.returncode}):\n"
                    f"{' '.join(cmd)}\n{r.stderr[-6000:]}")
    if r.returncode != 0:
        pytest.fail(f"dk_s3_tool rc {r.returncode}: {' '.join(cmd)}\n{r.stderr[-3000:]}")
    try:
        return json.loads(r.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"dk_s3_tool printed no JSON: {r.stdout!r}\n{r.stderr[-3000:]}")


# ---------------------------------------------------------------------------------------------
# Fault-injecting proxy
# ---------------------------------------------------------------------------------------------

class Rule:
    """Matches requests by method and a regex on "path?query"; acts on the first `times`."""

    def __init__(self, action: str, method: str | None = None, match: str = "",
                 times: int = 1 << 30, status: int = 503, code: str = "SlowDown",
                 delay: float = 0.0, skip: int = 0, header: str | None = None):
        self.action, self.method, self.match = action, method, re.compile(match)
        self.header = re.compile(header, re.I) if header else None
        self.times, self.status, self.code, self.delay, self.skip = times, status, code, delay, skip
        self.hits = 0

    def applies(self, method: str, target: str, headers: dict) -> bool:
        if self.method and self.method != method:
            return False
        if not self.match.search(target):
            return False
        if self.header and not any(self.header.search(f"{k}: {v}") for k, v in headers.items()):
            return False
        if self.skip > 0:
            self.skip -= 1
            return False
        if self.hits >= self.times:
            return False
        self.hits += 1
        return True


class FaultProxy:
    def __init__(self, upstream: str):
        u = urlsplit(upstream)
        self.up_host, self.up_port = u.hostname, u.port
        self.rules: list[Rule] = []
        self.log: list[dict] = []
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):  # quiet
                pass

            def _hard_close(self):
                try:
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                               struct.pack("ii", 1, 0))
                    self.connection.close()
                except OSError:
                    pass
                self.close_connection = True

            def _send(self, status, headers, body, head=False):
                self.send_response_only(status)
                for k, v in headers:
                    self.send_header(k, v)
                self.end_headers()
                if body and not head:
                    self.wfile.write(body)
                self.wfile.flush()

            def _any(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                target = self.path
                lower = {k.lower(): v for k, v in self.headers.items()}
                entry = {"method": self.command, "target": target, "headers": lower,
                         "body_len": len(body), "resp_len": 0, "start": time.monotonic(),
                         "end": None}
                with proxy.lock:
                    proxy.log.append(entry)
                    rule = next((r for r in proxy.rules
                                 if r.applies(self.command, target, lower)), None)
                act = rule.action if rule else "pass"
                if act == "delay":  # forwarded as usual, rule.delay seconds later
                    time.sleep(rule.delay)
                if act == "stall":
                    time.sleep(rule.delay)
                    return self._hard_close()
                if act == "reset":
                    return self._hard_close()
                if act == "ok":  # a server that ignores the request's conditions
                    return self._send(200, [("ETag", '"0"'), ("Content-Length", "0")], b"")
                if act == "status":
                    xml = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{rule.code}'
                           f'</Code><Message>injected by the test proxy</Message>'
                           f'<RequestId>proxy</RequestId></Error>').encode()
                    return self._send(rule.status, [("Content-Type", "application/xml"),
                                                    ("Content-Length", str(len(xml)))], xml,
                                      head=self.command == "HEAD")
                hdrs = {k: v for k, v in self.headers.items()
                        if k.lower() not in ("connection", "expect", "keep-alive",
                                             "transfer-encoding", "content-length")}
                if body or self.command in ("PUT", "POST"):
                    hdrs["Content-Length"] = str(len(body))
                try:
                    conn = http.client.HTTPConnection(proxy.up_host, proxy.up_port, timeout=120)
                    conn.request(self.command, target, body=body or None, headers=hdrs)
                    resp = conn.getresponse()
                    data = resp.read() if self.command != "HEAD" else b""
                    rh = [(k, v) for k, v in resp.getheaders()
                          if k.lower() not in ("connection", "transfer-encoding", "keep-alive",
                                               "content-length")]
                    length = resp.getheader("Content-Length") if self.command == "HEAD" else str(len(data))
                    status = resp.status
                    entry["resp_len"] = len(data)
                    conn.close()
                except OSError:
                    return self._hard_close()  # upstream gone: the client sees a reset
                if length is not None:
                    rh.append(("Content-Length", length))
                if act == "reset_after":
                    return self._hard_close()
                if act == "truncate" and data:  # half the body, then an orderly close
                    self._send(status, rh, data[: len(data) // 2])
                    try:
                        self.connection.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
                    self.close_connection = True
                    return
                if act == "slow_body" and data:
                    self.send_response_only(status)
                    for k, v in rh:
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data[:1])
                    self.wfile.flush()
                    time.sleep(rule.delay)
                    return self._hard_close()
                self._send(status, rh, data, head=self.command == "HEAD")
                entry["end"] = time.monotonic()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _any

            def handle(self):
                try:
                    super().handle()
                except OSError:
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def add(self, *rules: Rule):
        with self.lock:
            self.rules.extend(rules)

    def clear(self):
        with self.lock:
            self.rules.clear()
            self.log.clear()

    def requests(self, method: str | None = None, match: str = "") -> list[dict]:
        rx = re.compile(match)
        with self.lock:
            return [e for e in self.log if (not method or e["method"] == method)
                    and rx.search(e["target"])]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


# ---------------------------------------------------------------------------------------------
# Fixtures (imported by the test modules)
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """One SeaweedFS for the session (its own ports and directory)."""
    try:
        S3Server.build()
        srv = S3Server(tmp_path_factory.mktemp("s3server")).start()
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        pytest.fail(f"the S3 test server could not be started: {e}")
    yield srv
    srv.stop()


CORPUS_PREFIX = "corpus"


@pytest.fixture(scope="session")
def s3_corpus(s3_server):
    """The shared corpus (every table of the manifest) uploaded once per session under
    s3://<bucket>/corpus/<table> (boto3); returns that root URI. Hadoop's hidden checksum
    files beside data files (.part-...parquet.crc), which no Delta reader opens, stay behind.
    Read-only by convention: tests that write use their own prefix."""
    from concurrent.futures import ThreadPoolExecutor
    from botocore.config import Config
    data = dkharness.testdata_dir()
    tables = sorted({c["table"] for c in dkharness.load_manifest()["cases"]})
    files = [p for t in tables for p in (data / t).rglob("*") if p.is_file()
             and (not p.name.startswith(".") or p.parent.name == "_delta_log")]
    c = s3_server.client(Config(max_pool_connections=16))

    def up(p: Path):
        c.put_object(Bucket=s3_server.bucket, Key=f"{CORPUS_PREFIX}/{p.relative_to(data)}",
                     Body=p.read_bytes())

    with ThreadPoolExecutor(16) as ex:
        list(ex.map(up, files))
    return f"s3://{s3_server.bucket}/{CORPUS_PREFIX}"


@pytest.fixture
def s3_prefix(request):
    """A fresh key prefix per test ("/t-<test>-<n>")."""
    name = re.sub(r"[^A-Za-z0-9]+", "-", request.node.name)[:60]
    return f"/t-{name}-{time.time_ns() % 10**9}"


@pytest.fixture
def fault_proxy(s3_server):
    p = FaultProxy(s3_server.endpoint)
    yield p
    p.close()
