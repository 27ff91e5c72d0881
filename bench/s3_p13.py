"""P13 "s3_p13" (issue #17): P1, P2 and P3 over S3 — the tables on a real S3 server on
loopback (SeaweedFS, scripts/s3_server.sh via tests/python/s3env.py, started by this
benchmark on free ports and stopped at exit), read by dk, delta-rs and polars-deltalake
(delta-kernel-rs) through their own S3 clients with the same storage options.

Inputs (bench/cache, re-created when absent; uploaded with boto3 before measuring):
  P1 100k files  the snapshot_load table of 100,000 live files (checkpoint at v100 + 100 JSON
                 commits; only the log exists): load the latest snapshot, count its files
  P2 full        the scan_p2p3 lineitem table (100 files, 6M rows, 16 columns): all rows
  P3 1%          the same with l_orderkey in a 1% range the statistics confine to 2 files

Systems (a fresh process per repeat):
  dk          the Python binding built against this build (bench/cache/pydk-*):
              dk.Table(uri, storage_options).snapshot() [.scan(filter) -> pa.table]
  dk-no-read-ahead  the same with scan(read_ahead=-1): each reader fetches a row group's
              chunks (and the next file's footer) only when it gets to them — dk before
              read-ahead, in the same run (P2/P3 only)
  delta-rs    DeltaTable(uri, storage_options) [.get_add_actions / .to_pyarrow_table(filters)]
  polars      polars_deltalake.scan_delta(uri, storage_options)[.filter(...)].collect()
              (no file-listing API: P1 is pending)

Requests and bytes: after the timed runs, each system runs each variant once more through a
counting HTTP proxy (s3env.FaultProxy with no fault rules) and the requests it sent and the
response body bytes it received are reported beside the timings — and, for P3, compared with
the bytes of the files the statistics allow (the minimum a reader must fetch).
Targets (issue #17): dk >= 2x delta-rs on each; no more bytes than the stats require on P3.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import time
from pathlib import Path

NAME = "s3_p13"
BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
sys.path.insert(0, str(BENCH_DIR))
sys.path.insert(0, str(REPO / "tests" / "python"))

import scan_p2p3  # noqa: E402
import snapshot_load  # noqa: E402

BUCKET = "dk-bench"
VARIANTS = ["P1 100k files", "P2 full", "P3 1%"]
SYSTEMS = ["dk", "dk-no-read-ahead", "delta-rs", "polars"]


def _so(env: dict, endpoint: str | None = None) -> dict:
    return {"aws_access_key_id": env["AWS_ACCESS_KEY_ID"],
            "aws_secret_access_key": env["AWS_SECRET_ACCESS_KEY"],
            "aws_endpoint_url": endpoint or env["AWS_ENDPOINT_URL"], "aws_region": "us-east-1",
            "aws_allow_http": "true"}


def _upload(srv, root: Path, prefix: str, only_log: bool) -> int:
    from concurrent.futures import ThreadPoolExecutor
    from botocore.config import Config
    c = srv.client(Config(max_pool_connections=16))
    base = root / "_delta_log" if only_log else root
    files = [p for p in base.rglob("*") if p.is_file() and not p.name.startswith(".")]

    def up(p: Path):
        c.upload_file(str(p), srv.bucket, f"{prefix}/{p.relative_to(root)}")

    with ThreadPoolExecutor(16) as ex:
        list(ex.map(up, files))
    return len(files)


def _count(ctx, srv, argv: list[str]) -> dict:
    """Runs one worker through a counting proxy: requests sent, response bytes received."""
    import subprocess
    from s3env import FaultProxy
    proxy = FaultProxy(srv.endpoint)
    try:
        argv = [a.replace(srv.endpoint, proxy.endpoint) for a in argv]
        p = subprocess.run(argv, capture_output=True, text=True, timeout=ctx.timeout)
        if p.returncode != 0:
            return {"error": (p.stderr.strip().splitlines() or ["?"])[-1][:200]}
        log = proxy.requests()
        data = [e for e in log if "/_delta_log/" not in e["target"] and "list-type" not in e["target"]]
        return {"requests": len(log), "gets": sum(e["method"] == "GET" for e in log),
                "bytes": sum(e["resp_len"] for e in log), "data_requests": len(data),
                "data_bytes": sum(e["resp_len"] for e in data)}
    finally:
        proxy.close()


def prepare(ctx):
    from run import Prepared
    from s3env import S3Server
    import tempfile
    p1_root, p1_facts = snapshot_load.ensure_table("100k")
    lt_root, lt_facts = scan_p2p3.ensure_table()
    pydk, why = scan_p2p3.ensure_pydk(ctx.build)
    S3Server.build()
    srv = S3Server(Path(tempfile.mkdtemp(prefix="dk-p13-s3-")), bucket=BUCKET).start()
    atexit.register(srv.stop)
    t0 = time.perf_counter()
    n1 = _upload(srv, p1_root, "p1", only_log=True)
    n2 = _upload(srv, lt_root, "lineitem", only_log=False)
    up_s = time.perf_counter() - t0
    uris = {"P1 100k files": f"s3://{BUCKET}/p1", "P2 full": f"s3://{BUCKET}/lineitem",
            "P3 1%": f"s3://{BUCKET}/lineitem"}
    p3_min = lt_facts["p3_min_bytes"]
    info = {"server": f"SeaweedFS on {srv.endpoint} (loopback), bucket {BUCKET}; "
                      f"{n1} + {n2} objects uploaded in {up_s:.1f}s",
            "P1 table": f"{p1_root.name}: {p1_facts.get('live_files', 100000)} live files "
                        "(log only)",
            "P2/P3 table": f"{lt_root.name}: {lt_facts['files']} files, "
                           f"{lt_facts['bytes'] / 2**20:.1f} MiB, {scan_p2p3.ROWS} rows",
            "P3 predicate": f"{scan_p2p3.P3_SQL} → {lt_facts['rows']['P3 1%']} rows; the stats "
                            f"allow {len(lt_facts['p3_min_paths'])} files, {p3_min} bytes"}
    if pydk is None:
        info["dk"] = why
    expect = {"P1 100k files": 100000, "P2 full": lt_facts["rows"]["P2 full"],
              "P3 1%": lt_facts["rows"]["P3 1%"]}
    return Prepared(warm_files=[], info=info,
                    data={"ctx": ctx, "srv": srv, "uris": uris, "pydk": pydk and str(pydk), "why": why,
                          "expect": expect, "p3_min": p3_min})


def _argv(ctx, prep, system: str, variant: str, threads) -> list[str] | None:
    me = str(Path(__file__).resolve())
    srv = prep.data["srv"]
    so = json.dumps(_so(srv.env))
    uri = prep.data["uris"][variant]
    op = {"P1 100k files": "p1", "P2 full": "scan", "P3 1%": "scan"}[variant]
    flt = scan_p2p3.P3_SQL if variant == "P3 1%" else "-"
    if system in ("dk", "dk-no-read-ahead"):
        if not prep.data["pydk"] or (system != "dk" and op == "p1"):
            return None
        ahead = "0" if system == "dk" else "-1"
        return [ctx.python, me, "dk_" + op, prep.data["pydk"], uri, so, str(threads), flt, ahead]
    if system == "delta-rs":
        return [ctx.python, me, "rs_" + op, uri, so, str(threads), flt]
    if op == "p1":
        return None
    return [ctx.python, me, "pl_scan", uri, so, str(threads), flt]


def runs(ctx, prep):
    from run import Run
    out = []
    for variant in VARIANTS:
        for n in ([None] if variant.startswith("P1") else ctx.threads):
            for system in SYSTEMS:
                if not ctx.want(system):
                    continue
                argv = _argv(ctx, prep, system, variant, n or 2)
                why = (prep.data["why"] if system == "dk" else
                       "read-ahead is a scan option" if system == "dk-no-read-ahead" else
                       "polars-deltalake has no file-listing API")
                r = Run(system, variant, n, argv, pending=None if argv else why)
                r.expect_rows = prep.data["expect"][variant]
                out.append(r)
    return out


def summary(results, prep) -> str:
    ctx = prep.data["ctx"]
    ok = {(r.system, r.variant, r.threads): r for r in results if r.status == "ok"}
    lines = ["Ratios (median wall of the other system ÷ dk's; > 1: dk is faster; target ≥ 2× "
             "delta-rs; `vs no read-ahead`: dk with read_ahead=-1 ÷ dk, the gain of read-ahead):",
             "", "| variant | threads | vs delta-rs | vs polars | vs no read-ahead |",
             "|---|---|---|---|---|"]
    seen = sorted({(r.variant, r.threads) for r in results}, key=lambda x: (VARIANTS.index(x[0]), x[1] or 0))
    for variant, n in seen:
        b = ok.get(("dk", variant, n))
        cells = []
        for other in ("delta-rs", "polars", "dk-no-read-ahead"):
            o = ok.get((other, variant, n))
            cells.append("—" if b is None or o is None else
                         f"{o.median_s / b.median_s:.2f}×" +
                         (" (target met)" if other == "delta-rs" and o.median_s / b.median_s >= 2
                          else " (**target missed**)" if other == "delta-rs" else ""))
        lines.append(f"| {variant} | {n if n else '—'} | " + " | ".join(cells) + " |")
    lines += ["", "Requests and bytes (one run each through a counting proxy, threads 2; with "
              "--threads 1 also dk's scans at 1 thread, whose read-ahead is the stream's own):",
              "", "| variant | system | threads | requests | GETs | response bytes | of which "
              "data files (requests, bytes) |", "|---|---|---|---|---|---|---|"]
    counts = {}
    for variant in VARIANTS:
        for system in SYSTEMS:
            if not ctx.want(system):
                continue
            one = 1 in ctx.threads and system.startswith("dk") and not variant.startswith("P1")
            for n in ([1, 2] if one else [2]):
                argv = _argv(ctx, prep, system, variant, n)
                if argv is None:
                    continue
                c = _count(ctx, prep.data["srv"], argv)
                if n == 2:
                    counts[(variant, system)] = c
                if "error" in c:
                    lines.append(f"| {variant} | {system} | {n} | error: {c['error']} | | | |")
                else:
                    lines.append(f"| {variant} | {system} | {n} | {c['requests']} | {c['gets']} "
                                 f"| {c['bytes']:,} | {c['data_requests']}, {c['data_bytes']:,} |")
    d = counts.get(("P3 1%", "dk"), {})
    if "data_bytes" in d:
        m = prep.data["p3_min"]
        lines += ["", f"P3: dk fetched {d['data_bytes']:,} bytes of data files (footers "
                      f"included; the log apart); the files the stats allow hold {m:,} bytes: "
                      + ("no more than the stats require" if d["data_bytes"] <= m
                         else f"**{d['data_bytes'] - m:,} bytes more than the stats require**")]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Workers (one measured operation per process): python bench/s3_p13.py OP ARGS...
# ---------------------------------------------------------------------------------------------

def _threads(n: str) -> None:
    import pyarrow as pa
    pa.set_cpu_count(int(n))
    pa.set_io_thread_count(int(n))


def w_dk_p1(pydk, uri, so, threads, flt, ahead="0"):
    sys.path.insert(0, pydk)
    import dk
    from workers import _emit, _rss_kb, _start
    base = _rss_kb()
    t0 = _start()
    snap = dk.Table(uri, storage_options=json.loads(so)).snapshot()
    n = snap.num_files
    _emit(time.perf_counter() - t0, n, base, version=snap.version)


def w_dk_scan(pydk, uri, so, threads, flt, ahead="0"):
    sys.path.insert(0, pydk)
    import dk
    import pyarrow as pa
    from workers import _emit, _rss_kb, _start
    base = _rss_kb()
    t0 = _start()
    scan = dk.Table(uri, storage_options=json.loads(so)).snapshot().scan(
        filter=None if flt == "-" else flt, threads=int(threads), read_ahead=int(ahead))
    t = pa.table(scan)
    rows = t.num_rows
    del t
    _emit(time.perf_counter() - t0, rows, base)


def w_rs_p1(uri, so, threads, flt):
    from deltalake import DeltaTable
    from workers import _emit, _rss_kb, _start
    base = _rss_kb()
    t0 = _start()
    dt = DeltaTable(uri, storage_options=json.loads(so))
    adds = dt.get_add_actions(flatten=True)
    n = adds.num_rows if hasattr(adds, "num_rows") else len(adds)
    _emit(time.perf_counter() - t0, n, base, version=dt.version())


def w_rs_scan(uri, so, threads, flt):
    from deltalake import DeltaTable
    from workers import _emit, _rss_kb, _start
    _threads(threads)
    base = _rss_kb()
    t0 = _start()
    filters = None if flt == "-" else [("l_orderkey", ">=", scan_p2p3.P3_LO),
                                       ("l_orderkey", "<", scan_p2p3.P3_HI)]
    t = DeltaTable(uri, storage_options=json.loads(so)).to_pyarrow_table(filters=filters)
    rows = t.num_rows
    del t
    _emit(time.perf_counter() - t0, rows, base)


def w_pl_scan(uri, so, threads, flt):
    os.environ["POLARS_MAX_THREADS"] = threads
    import polars as pl
    import polars_deltalake
    from workers import _emit, _rss_kb, _start
    base = _rss_kb()
    t0 = _start()
    lf = polars_deltalake.scan_delta(uri, storage_options=json.loads(so))
    if flt != "-":
        lf = lf.filter((pl.col("l_orderkey") >= scan_p2p3.P3_LO) &
                       (pl.col("l_orderkey") < scan_p2p3.P3_HI))
    df = lf.collect()
    rows = df.height
    del df
    _emit(time.perf_counter() - t0, rows, base)


OPS = {"dk_p1": w_dk_p1, "dk_scan": w_dk_scan, "rs_p1": w_rs_p1, "rs_scan": w_rs_scan,
       "pl_scan": w_pl_scan}

if __name__ == "__main__":
    OPS[sys.argv[1]](*sys.argv[2:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
