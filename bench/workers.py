"""Benchmark workers for non-dk systems: one measured operation per process.

Invoked by bench/run.py as `python bench/workers.py <op> ARGS...`; imports happen before the
clock starts; prints one JSON line {"seconds": ..., "rows": ..., "rss_base_kb": ...} where
rss_base_kb is this process's peak RSS after imports, before the operation (run.py measures
the whole process' peak with wait4 and reports both).
"""

from __future__ import annotations

import os
import json
import resource
import sys
import time


def _rss_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


_CPU0 = [0.0]


def _start() -> float:
    _CPU0[0] = time.process_time()
    return time.perf_counter()


def _emit(seconds: float, rows: int, base: int, **extra) -> None:
    cpu = time.process_time() - _CPU0[0]
    print(json.dumps({"seconds": seconds, "rows": rows, "rss_base_kb": base,
                      "cpu_seconds": cpu, **extra}))


def pyarrow_read(path: str, threads: str) -> None:
    """pq.read_table(path) of all columns with N CPU and IO threads."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    n = int(threads)
    pa.set_cpu_count(n)
    pa.set_io_thread_count(n)
    base = _rss_kb()
    t0 = _start()
    t = pq.read_table(path, use_threads=n > 1)
    rows = t.num_rows
    del t
    _emit(time.perf_counter() - t0, rows, base)


def pyarrow_stream(path: str, threads: str) -> None:
    """ParquetFile(path).iter_batches(65536 rows) of all columns, each batch dropped at once
    (streaming like dk's driver, unlike read_table which materialises the whole table)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    n = int(threads)
    pa.set_cpu_count(n)
    pa.set_io_thread_count(n)
    base = _rss_kb()
    t0 = _start()
    rows = 0
    pf = pq.ParquetFile(path)
    for b in pf.iter_batches(batch_size=65536, use_threads=n > 1):
        rows += b.num_rows
        del b
    _emit(time.perf_counter() - t0, rows, base)


def duckdb_read(path: str, threads: str) -> None:
    """DuckDB SELECT * FROM read_parquet(path), all fetched to Arrow."""
    import duckdb
    import pyarrow  # noqa: F401  (fetching to Arrow needs it; import outside the clock)
    con = duckdb.connect(config={"threads": int(threads)})
    base = _rss_kb()
    t0 = _start()
    res = con.sql(f"SELECT * FROM read_parquet('{path}')").arrow()
    if hasattr(res, "read_all"):  # a RecordBatchReader in newer DuckDB
        res = res.read_all()
    rows = res.num_rows
    del res
    _emit(time.perf_counter() - t0, rows, base)


def deltalake_files(path: str) -> None:
    """delta-rs: load the latest snapshot and its add actions (flattened), iterate them."""
    from deltalake import DeltaTable
    base = _rss_kb()
    t0 = _start()
    dt = DeltaTable(path)
    t_load = time.perf_counter() - t0
    adds = dt.get_add_actions(flatten=True)
    # iterate: touch every path (materialised as Arrow by delta-rs)
    rows = 0
    col = adds.column("path")
    for chunk in getattr(col, "chunks", [col]):
        rows += len(chunk)
    n = adds.num_rows if hasattr(adds, "num_rows") else len(adds)
    _emit(time.perf_counter() - t0, n, base, load_seconds=t_load, version=dt.version(),
          iterated=rows)


def deltalake_refresh(path: str, commit: str) -> None:
    """delta-rs (P11b): load the latest snapshot, publish COMMIT as the next version, then
    time DeltaTable.update_incremental(); the add actions (the file list a query plans over)
    are then materialised and reported apart as pass_seconds."""
    import shutil
    from deltalake import DeltaTable
    base = _rss_kb()
    dt = DeltaTable(path)
    nxt = os.path.join(path, "_delta_log", "%020d.json" % (dt.version() + 1))
    shutil.copyfile(commit, nxt)
    try:
        t0 = _start()
        dt.update_incremental()
        secs = time.perf_counter() - t0
        adds = dt.get_add_actions(flatten=True)
        n = adds.num_rows if hasattr(adds, "num_rows") else len(adds)
        pass_secs = time.perf_counter() - t0 - secs
        version = dt.version()
    finally:
        os.unlink(nxt)
    _emit(secs, n, base, version=version, pass_seconds=pass_secs)


def deltalake_cdf(path: str, start: str, end: str) -> None:
    """delta-rs (P11): DeltaTable.load_cdf(starting_version, ending_version), every batch of
    the reader dropped as it comes."""
    from deltalake import DeltaTable
    base = _rss_kb()
    t0 = _start()
    reader = DeltaTable(path).load_cdf(starting_version=int(start), ending_version=int(end))
    rows = 0
    for b in reader:
        rows += b.num_rows
        del b
    _emit(time.perf_counter() - t0, rows, base)


def polars_cdf(path: str, start: str, end: str) -> None:
    """polars-deltalake (delta-kernel-rs; P11): scan_cdf(...).collect() (a DataFrame)."""
    import polars_deltalake as pdl
    base = _rss_kb()
    t0 = _start()
    df = pdl.scan_cdf(path, start_version=int(start), end_version=int(end)).collect()
    rows = df.height
    del df
    _emit(time.perf_counter() - t0, rows, base)


def dk_python_cdf(path: str, start: str, end: str) -> None:
    """dk's Python binding (P11): pyarrow.table(dk.Table(path).changes(...)) (materialised)."""
    import pyarrow as pa
    import dk
    base = _rss_kb()
    t0 = _start()
    t = pa.table(dk.Table(path).changes(start_version=int(start), end_version=int(end)))
    rows = t.num_rows
    del t
    _emit(time.perf_counter() - t0, rows, base)


OPS = {"pyarrow_read": pyarrow_read, "pyarrow_stream": pyarrow_stream,
       "duckdb_read": duckdb_read,
       "deltalake_files": deltalake_files, "deltalake_refresh": deltalake_refresh,
       "deltalake_cdf": deltalake_cdf, "polars_cdf": polars_cdf, "dk_python_cdf": dk_python_cdf}

if __name__ == "__main__":
    OPS[sys.argv[1]](*sys.argv[2:])
