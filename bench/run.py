#!/usr/bin/env python3
"""bench/run.py — runs dk's benchmarks and records the results.

usage: bench/run.py [NAME...] [--repeats N] [--threads 1,2] [--warmup N] [--build DIR]
                    [--no-write] [--list] [--systems dk,pyarrow,...] [--sizes ...]

Each benchmark is a module bench/<name>.py with NAME, a docstring, prepare(ctx) -> Prepared
(generates its inputs once into bench/cache/, re-created when absent) and runs(ctx, prep) ->
[Run], optionally summary(results, prep) -> str (printed after the table and appended to the
.md). For every Run (system x variant x threads) the runner:
  * reads the input files once to warm the OS page cache,
  * does `--warmup` untimed runs, then `--repeats` (>= 5 by default) timed runs, each in a
    fresh process (so caches and peak RSS are comparable),
  * takes the time the process reports on stdout as JSON {"seconds": ...} (operation only,
    without interpreter start-up and imports), or the process wall time for "wall" runs,
  * takes the peak RSS of the whole process from wait4() (ru_maxrss),
and reports median / min / max seconds, peak RSS and "dk is X.XX× faster/slower than ..."
ratios, printed as a table and written to bench/results/<name>-<date>.md and .json.

A process that prints {"status": "pending", "reason": ...} and exits 3 (e.g. a dk driver
built without the feature) is reported as "pending", not as a failure.
Benchmarks never run in CI (`make test` does not call this script; `make bench` does).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import importlib
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
CACHE = BENCH_DIR / "cache"
RESULTS = BENCH_DIR / "results"
BENCHMARKS = ["parquet_decode", "snapshot_load", "sqlite_sql", "scan_p2p3", "refresh_p11b", "s3_p13",
              "parquet_write", "cdf_p11"]
EXIT_PENDING = 3

sys.path.insert(0, str(BENCH_DIR))


# ---------------------------------------------------------------------------------------------
# Data model
# ---------------------------------------------------------------------------------------------

@dataclass
class Ctx:
    build: Path
    repeats: int
    warmup: int
    threads: list[int]
    systems: list[str] | None
    sizes: list[str] | None
    timeout: float
    python: str = sys.executable

    def worker(self, op: str, *args: Any) -> list[str]:
        """argv of a Python worker (bench/workers.py) in a fresh interpreter."""
        return [self.python, str(BENCH_DIR / "workers.py"), op, *map(str, args)]

    def dk_exe(self, name: str) -> Path:
        return self.build / name

    def spawn(self) -> Path | None:
        """The bench_spawn helper (clean peak RSS), if built."""
        p = self.build / "bench_spawn"
        return p if p.exists() else None

    def want(self, system: str) -> bool:
        return self.systems is None or system in self.systems


@dataclass
class Run:
    system: str                 # "dk", "pyarrow", "duckdb", "delta-rs", "spark", ...
    variant: str                # what is measured, e.g. "decode", "10k files"
    threads: int | None         # None = not applicable
    argv: list[str] | None      # process to run; None with `pending` set
    mode: str = "inner"         # "inner": process prints seconds; "wall": time the process
    pending: str | None = None  # reason the run cannot happen yet
    error: str | None = None    # a failed pre-check (e.g. wrong answer): reported, not timed
    expect_rows: int | None = None  # the right row count, when known: checked every run
    note: str = ""
    max_repeats: int | None = None  # caps --repeats for this row (very slow systems)
    warmup: int | None = None       # overrides --warmup for this row (e.g. 0 for cold starts)


@dataclass
class Prepared:
    warm_files: list[Path]      # read once before measuring (page cache)
    info: dict = field(default_factory=dict)  # input description for the report
    data: dict = field(default_factory=dict)  # private to the benchmark (paths, ...)


@dataclass
class Result:
    system: str
    variant: str
    threads: int | None
    status: str                 # "ok", "pending", "error"
    median_s: float | None = None
    min_s: float | None = None
    max_s: float | None = None
    repeats: int = 0
    peak_rss_mib: float | None = None
    base_rss_mib: float | None = None
    cpu_median_s: float | None = None
    rows: int | None = None
    extra: dict = field(default_factory=dict)
    reason: str = ""
    vs_dk: str = ""
    cpu_vs_dk: float | None = None  # this row's CPU seconds / dk's
    samples: list[float] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# Measuring one process
# ---------------------------------------------------------------------------------------------

def run_process(argv: list[str], timeout: float, env: dict | None = None,
                spawn: Path | None = None) -> dict:
    """Runs argv to completion; returns rc, wall seconds, peak RSS (KiB), CPU, stdout, stderr.

    With ``spawn`` (build/bench_spawn) the command runs as a child of that tiny helper, so its
    ru_maxrss does not include this runner's memory image (see bench/spawn.c).
    """
    report = None
    if spawn is not None:
        fd, report = tempfile.mkstemp(prefix="bench-ru-")
        os.close(fd)
        argv = [str(spawn), report, *argv]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                             env=env, start_new_session=True)
        killer = threading.Timer(timeout, lambda: os.killpg(p.pid, signal.SIGKILL))
        killer.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            killer.cancel()
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    maxrss, cpu = ru.ru_maxrss, ru.ru_utime + ru.ru_stime
    if report is not None:
        try:
            rep_doc = json.loads(Path(report).read_text() or "null")
        finally:
            os.unlink(report)
        if rep_doc:
            maxrss, cpu = rep_doc["maxrss_kb"], rep_doc["utime"] + rep_doc["stime"]
    doc = None
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            try:
                doc = json.loads(line)
            except json.JSONDecodeError:
                pass
            break
    return {"rc": p.returncode, "wall": wall, "maxrss_kb": maxrss, "cpu": cpu, "stdout": stdout,
            "stderr": stderr, "json": doc}


def warm(files: list[Path]) -> None:
    """Reads every byte of the files so that the first measured run does not pay disk I/O."""
    for f in files:
        paths = [f] if f.is_file() else sorted(p for p in f.rglob("*") if p.is_file())
        for p in paths:
            with open(p, "rb", buffering=0) as fh:
                while fh.read(1 << 22):
                    pass


def measure(run: Run, ctx: Ctx) -> Result:
    r = Result(run.system, run.variant, run.threads, "ok")
    if run.error:
        r.status, r.reason = "error", run.error
        return r
    if run.pending or run.argv is None:
        r.status, r.reason = "pending", run.pending or "not available"
        return r
    if not Path(run.argv[0]).exists():
        r.status, r.reason = "error", f"{run.argv[0]} not found (build it first)"
        return r
    secs, cpus, rss, base, rows, extras = [], [], [], [], set(), {}
    warmup = ctx.warmup if run.warmup is None else run.warmup
    repeats = ctx.repeats if run.max_repeats is None else min(ctx.repeats, run.max_repeats)
    for i in range(warmup + repeats):
        p = run_process(run.argv, ctx.timeout, spawn=ctx.spawn())
        doc = p["json"] or {}
        if p["rc"] == EXIT_PENDING and doc.get("status") == "pending":
            r.status, r.reason = "pending", doc.get("reason", "pending")
            return r
        if p["rc"] != 0 or (run.mode == "inner" and "seconds" not in doc):
            r.status = "error"
            r.reason = (f"rc={p['rc']}: " + (p["stderr"].strip().splitlines() or [""])[-1])[:300]
            return r
        if i < warmup:
            continue
        secs.append(float(doc["seconds"]) if run.mode == "inner" else p["wall"])
        cpus.append(float(doc["cpu_seconds"]) if "cpu_seconds" in doc else p["cpu"])
        rss.append(p["maxrss_kb"])
        if "rss_base_kb" in doc:
            base.append(doc["rss_base_kb"])
        if "rows" in doc:
            rows.add(doc["rows"])
        for k, v in doc.items():
            if (k not in ("seconds", "rows", "rss_base_kb", "cpu_seconds")
                    and isinstance(v, (int, float))):
                extras.setdefault(k, []).append(v)
    r.samples = secs
    r.repeats = len(secs)
    r.median_s = statistics.median(secs)
    r.min_s, r.max_s = min(secs), max(secs)
    r.cpu_median_s = statistics.median(cpus)
    r.peak_rss_mib = max(rss) / 1024.0
    r.base_rss_mib = (max(base) / 1024.0) if base else None
    if len(rows) > 1:
        r.status, r.reason = "error", f"row count differs between repeats: {sorted(rows)}"
    r.rows = rows.pop() if rows else None
    if run.expect_rows is not None and r.status == "ok" and r.rows != run.expect_rows:
        r.status, r.reason = "error", f"wrong answer: {r.rows} rows, expected {run.expect_rows}"
    r.extra = {k: statistics.median(v) for k, v in extras.items()}
    if run.note:
        r.reason = run.note
    return r


def add_ratios(results: list[Result]) -> None:
    """Fills vs_dk: dk's median relative to each other system's, same variant and threads."""
    dk = {(r.variant, r.threads): r for r in results if r.system == "dk" and r.status == "ok"}
    for r in results:
        if r.system == "dk" or r.status != "ok":
            continue
        d = dk.get((r.variant, r.threads))
        if d is None or not d.median_s:
            r.vs_dk = "n/a (dk pending)" if any(
                x.system == "dk" and x.variant == r.variant for x in results) else ""
            continue
        if r.cpu_median_s and d.cpu_median_s:
            r.cpu_vs_dk = r.cpu_median_s / d.cpu_median_s
        q = r.median_s / d.median_s
        r.vs_dk = (f"dk is {q:.2f}× faster than {r.system}" if q >= 1
                   else f"dk is {1 / q:.2f}× slower than {r.system}")


# ---------------------------------------------------------------------------------------------
# Reporting
# ---------------------------------------------------------------------------------------------

def _fmt(x: float | None, spec: str = ".3f") -> str:
    return "—" if x is None else format(x, spec)


def host_info(ctx: Ctx) -> dict:
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 1048576:.1f} GiB"
    except OSError:
        pass
    versions = {}
    for mod in ("pyarrow", "duckdb", "deltalake"):
        try:
            from importlib.metadata import version
            versions[mod] = version(mod)
        except Exception:  # noqa: BLE001
            versions[mod] = "?"
    cache = {}
    cc = ctx.build / "CMakeCache.txt"
    if cc.exists():
        for line in cc.read_text(errors="replace").splitlines():
            for key in ("CMAKE_BUILD_TYPE", "DK_SANITIZE", "DK_NATIVE", "CMAKE_C_COMPILER",
                        "CMAKE_HOME_DIRECTORY"):
                if line.startswith(key + ":"):
                    cache[key] = line.split("=", 1)[1]
    src = cache.get("CMAKE_HOME_DIRECTORY", str(REPO))  # the sources dk was built from
    git = subprocess.run(["git", "-C", src, "describe", "--always", "--dirty"],
                         capture_output=True, text=True).stdout.strip()
    subject = subprocess.run(["git", "-C", src, "log", "-1", "--format=%s"],
                             capture_output=True, text=True).stdout.strip()
    if subject:
        git += f" “{subject[:80]}”"
    return {"cpu": cpu, "cores": os.cpu_count(), "memory": mem, "kernel": platform.release(),
            "python": platform.python_version(), "versions": versions, "dk_git": git,
            "dk_build": str(ctx.build), "dk_cmake": cache}


def loadavg() -> str:
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "?"


def _busy(host: dict) -> bool:
    try:
        la = max(float(host["load_before"].split()[0]), float(host["load_after"].split()[0]))
    except (KeyError, ValueError, IndexError):
        return False
    return la > 0.75 * (host.get("cores") or 1)


def render_table(results: list[Result]) -> str:
    head = ("| system | variant | threads | median s | min s | max s | n | CPU s "
            "| CPU ÷ dk CPU | peak RSS MiB | rows | vs dk (median wall) / status |")
    lines = [head, "|" + "---|" * 12]
    for r in results:
        status = r.vs_dk if r.status == "ok" else f"**{r.status}**: {r.reason}"
        if r.status == "ok" and r.reason:
            status = (status + "; " if status else "") + r.reason
        lines.append(
            f"| {r.system} | {r.variant} | {'—' if r.threads is None else r.threads} "
            f"| {_fmt(r.median_s)} | {_fmt(r.min_s)} | {_fmt(r.max_s)} | {r.repeats or '—'} "
            f"| {_fmt(r.cpu_median_s)} | {_fmt(r.cpu_vs_dk, '.2f')} "
            f"| {_fmt(r.peak_rss_mib, '.0f')} | {'—' if r.rows is None else r.rows} "
            f"| {status} |")
    return "\n".join(lines)


def render_md(name: str, doc: str, stamp: str, prep: Prepared, host: dict,
              results: list[Result], ctx: Ctx) -> str:
    title = doc.strip().splitlines()[0]
    out = [f"# {name} — {stamp}", "", title, "",
           f"Host: {host['cpu']}, {host['cores']} cores, {host['memory']}, Linux "
           f"{host['kernel']}; Python {host['python']}; "
           + ", ".join(f"{k} {v}" for k, v in host["versions"].items())
           + f"; dk {host['dk_git']} "
           f"({host['dk_cmake'].get('CMAKE_BUILD_TYPE') or 'RelWithDebInfo (default)'}"
           f"{', DK_NATIVE' if host['dk_cmake'].get('DK_NATIVE') == 'ON' else ''})", "",
           f"Method: {ctx.warmup} warm-up + {ctx.repeats} timed runs per row, each in a fresh "
           "process, page cache warmed first; seconds = the operation as timed inside the "
           "process (wall time of the whole process for `wall` rows); CPU s = median user+sys "
           "CPU of the operation (of the whole process for `wall` rows); peak RSS = ru_maxrss "
           "of the process via " + ("bench_spawn" if ctx.spawn() else
                                    "wait4 from the runner (**includes the runner's image**)")
           + " (includes the Python interpreter and imports for Python systems). "
           f"Load average before/after: {host.get('load_before', '?')} / "
           f"{host.get('load_after', '?')} on {host['cores']} cores"
           + (" — **the machine was busy; wall times are noisy, compare CPU s**"
              if _busy(host) else "") + ".", ""]
    if prep.info:
        out.append("Input:")
        out.extend(f"- {k}: {v}" for k, v in prep.info.items())
        out.append("")
    out.append(render_table(results))
    extras = [r for r in results if r.extra]
    if extras:
        out += ["", "Extra measurements (medians):"]
        for r in extras:
            ex = ", ".join(f"{k}={v:.4g}" for k, v in r.extra.items())
            out.append(f"- {r.system} / {r.variant} / threads {r.threads}: {ex}")
    out.append("")
    return "\n".join(out)


def run_benchmark(name: str, ctx: Ctx, write: bool) -> list[Result]:
    mod = importlib.import_module(name)
    print(f"== {name}: preparing inputs (cached in {CACHE})", flush=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    prep: Prepared = mod.prepare(ctx)
    for k, v in prep.info.items():
        print(f"   {k}: {v}")
    load_before = loadavg()
    if _busy({"load_before": load_before, "load_after": load_before, "cores": os.cpu_count()}):
        print(f"   warning: load average {load_before} on {os.cpu_count()} cores; "
              "timings will be noisy", flush=True)
    print("   warming page cache", flush=True)
    warm(prep.warm_files)
    results = []
    for run in mod.runs(ctx, prep):
        if not ctx.want(run.system):
            continue
        t = "" if run.threads is None else f", {run.threads} thread(s)"
        print(f"-- {run.system} / {run.variant}{t} ...", end=" ", flush=True)
        res = measure(run, ctx)
        print(res.status if res.status != "ok" else
              f"median {res.median_s:.3f}s (min {res.min_s:.3f}, max {res.max_s:.3f}), "
              f"CPU {res.cpu_median_s:.3f}s, peak RSS {res.peak_rss_mib:.0f} MiB", flush=True)
        results.append(res)
    add_ratios(results)
    print()
    print(render_table(results))
    print()
    # optional benchmark-specific summary (e.g. ratio matrix, targets), printed and recorded
    summary = mod.summary(results, prep) if hasattr(mod, "summary") else ""
    if summary:
        print(summary)
        print()
    if write:
        now = _dt.datetime.now(_dt.timezone.utc)
        RESULTS.mkdir(parents=True, exist_ok=True)
        host = host_info(ctx)
        host["load_before"], host["load_after"] = load_before, loadavg()
        base = RESULTS / f"{name}-{now:%Y-%m-%d}"
        doc = {"benchmark": name, "utc": now.isoformat(timespec="seconds"), "host": host,
               "method": {"repeats": ctx.repeats, "warmup": ctx.warmup,
                          "threads": ctx.threads,
                          "rss": "bench_spawn" if ctx.spawn() else "wait4 (includes runner)"},
               "input": prep.info, "results": [asdict(r) for r in results],
               "summary": summary}
        base.with_suffix(".json").write_text(json.dumps(doc, indent=1, default=str) + "\n")
        base.with_suffix(".md").write_text(
            render_md(name, mod.__doc__ or name, f"{now:%Y-%m-%d %H:%M} UTC", prep, host,
                      results, ctx) + (f"\n{summary}\n" if summary else ""))
        print(f"wrote {base}.md and .json")
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help=f"benchmarks to run (default: all): {BENCHMARKS}")
    ap.add_argument("--repeats", type=int, default=5, help="timed runs per row (default 5)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed runs first (default 1)")
    ap.add_argument("--threads", default="1,2", help="thread counts (default 1,2)")
    ap.add_argument("--build", default=os.environ.get("DK_BUILD", "build"),
                    help="dk build directory (default $DK_BUILD or build)")
    ap.add_argument("--systems", help="only these systems, comma-separated")
    ap.add_argument("--sizes", help="benchmark-specific input sizes, comma-separated")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per process")
    ap.add_argument("--no-write", action="store_true", help="do not write bench/results/")
    ap.add_argument("--list", action="store_true", help="list benchmarks and exit")
    a = ap.parse_args(argv)
    if a.list:
        for n in BENCHMARKS:
            doc = (importlib.import_module(n).__doc__ or "").strip().splitlines()
            print(f"{n:16s} {doc[0] if doc else ''}")
        return 0
    names = a.names or BENCHMARKS
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        ap.error(f"unknown benchmark(s) {unknown}; known: {BENCHMARKS}")
    build = Path(a.build)
    build = build if build.is_absolute() else REPO / build
    cc = build / "CMakeCache.txt"
    if cc.exists() and "DK_SANITIZE:BOOL=ON" in cc.read_text(errors="replace"):
        print(f"warning: {build} is a sanitizer build; dk timings are meaningless",
              file=sys.stderr)
    ctx = Ctx(build=build, repeats=a.repeats, warmup=a.warmup,
              threads=[int(x) for x in a.threads.split(",")],
              systems=a.systems.split(",") if a.systems else None,
              sizes=a.sizes.split(",") if a.sizes else None, timeout=a.timeout)
    if ctx.spawn() is None:
        print(f"warning: {ctx.build}/bench_spawn not built; peak RSS will include the "
              "runner's own memory", file=sys.stderr)
    if ctx.repeats < 5:
        print("note: fewer than 5 repeats; medians are less reliable", file=sys.stderr)
    for n in names:
        run_benchmark(n, ctx, write=not a.no_write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
