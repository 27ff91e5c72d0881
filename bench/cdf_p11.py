"""P11 "cdf_p11" (issue #19): the change data feed of 100 commits over the lineitem-like table.

Input: the 6M-row lineitem-like data of P0 (bench/parquet_decode.py, same seed) written by
Spark + delta-spark as a Delta table with delta.enableChangeDataFeed and deletion vectors
(bench/spark_cdf_p11.py gen: 100 files clustered on l_orderkey at v0, then 100 commits: 34
appends of ~2,000 rows, 33 UPDATEs of ~2,000 rows — deletion vectors + cdc files — and 33
DELETEs of ~2,000 rows — deletion vectors only, so readers infer the deletes from the DV
differences, reading whole 60,000-row files), cached under bench/cache/cdf-p11/ (Spark is
needed once, to write it).

Variant: "v1..v100": the change rows of the 100 commits (inserts, update pre/post images,
deletes), every column plus _change_type, _commit_version, _commit_timestamp.

Systems (fresh process per repeat):
  dk         bench_changes TABLE 1 100 0 (C driver: dk_changes_new + dk_changes_read, batches
             dropped as they come; automatic table threads: files read ahead on the executor)
  dk-1thread the same with 1 table thread (no read-ahead)
  dk-python  pa.table(dk.Table(p).changes(start_version=1, end_version=100)) (materialised)
  delta-rs   DeltaTable(p).load_cdf(1, 100), batches dropped as they come
  polars     polars_deltalake.scan_cdf(p, 1, 100).collect() (delta-kernel-rs; materialised)
  spark      readChangeFeed [1, 100] to the noop sink in a warm session (bench/spark_cdf_p11.py)
  dk-base    (when DK_BENCH_BASE names another build directory) dk and dk-1thread built from
             another commit: before/after in one run
Every system's row count is checked against delta-rs's (counted once in prepare).
Targets: dk >= 3x delta-rs, >= 2x polars-deltalake.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

NAME = "cdf_p11"
START, END = 1, 100
BENCH_DIR = Path(__file__).resolve().parent


def prepare(ctx):
    from run import CACHE, Prepared
    import parquet_decode
    src = CACHE / f"lineitem-{parquet_decode.ROWS // 1_000_000}m-seed{parquet_decode.SEED}.parquet"
    if not src.exists():
        print(f"   generating {src.name} ...", flush=True)
        parquet_decode.make_lineitem(src)
    table = CACHE / "cdf-p11"
    if not table.exists():
        print("   writing the P11 table with Spark (one session, a few minutes) ...", flush=True)
        subprocess.run([ctx.python, str(BENCH_DIR / "spark_cdf_p11.py"), "gen", str(src),
                        str(table)], check=True)
    from deltalake import DeltaTable
    dt = DeltaTable(str(table))
    rows = sum(b.num_rows for b in dt.load_cdf(starting_version=START, ending_version=END))
    log = table / "_delta_log"
    ops = {}
    import json
    for v in range(START, END + 1):
        with open(log / ("%020d.json" % v)) as f:
            for line in f:
                ci = json.loads(line).get("commitInfo")
                if ci:
                    ops[ci["operation"]] = ops.get(ci["operation"], 0) + 1
    data_bytes = sum(p.stat().st_size for p in table.rglob("*.parquet"))
    info = {"table": f"{dt.version() + 1} versions, {len(dt.file_uris())} live files, "
                     f"{data_bytes / 2**20:.0f} MiB of Parquet (data + cdc)",
            "commits read": f"v{START}..v{END}: " + ", ".join(f"{n} {op}" for op, n in
                                                              sorted(ops.items())),
            "change rows": str(rows)}
    return Prepared(warm_files=[p for p in table.rglob("*") if p.is_file()], info=info,
                    data={"table": str(table), "rows": rows})


def runs(ctx, prep):
    from run import Run
    t, rows = prep.data["table"], prep.data["rows"]
    variant = f"v{START}..v{END}"
    drv = str(ctx.dk_exe("bench_changes"))
    out = [Run("dk", variant, None, [drv, t, str(START), str(END), "0"], expect_rows=rows,
               note="dk_changes_new + dk_changes_read, streamed; table threads automatic: "
                    "files read ahead on the executor"),
           Run("dk-1thread", variant, None, [drv, t, str(START), str(END), "1"],
               expect_rows=rows, note="the same on 1 thread (no read-ahead)")]
    base = os.environ.get("DK_BENCH_BASE")
    if base:  # before/after in one run: the same drivers built from another commit
        bdrv = str(Path(base) / "bench_changes")
        out += [Run("dk-base", variant, None, [bdrv, t, str(START), str(END), "0"],
                    expect_rows=rows, note=f"dk of DK_BENCH_BASE={base}"),
                Run("dk-base-1thread", variant, None, [bdrv, t, str(START), str(END), "1"],
                    expect_rows=rows, note="the same on 1 thread")]
    out.append(Run("dk-python", variant, None, ctx.worker("dk_python_cdf", t, START, END),
                   expect_rows=rows, note="pa.table(Table.changes(...))"))
    out.append(Run("delta-rs", variant, None, ctx.worker("deltalake_cdf", t, START, END),
                   expect_rows=rows, note="load_cdf, streamed"))
    try:
        import polars_deltalake  # noqa: F401
        out.append(Run("polars", variant, None, ctx.worker("polars_cdf", t, START, END),
                       expect_rows=rows, note="scan_cdf().collect()"))
    except ImportError:
        out.append(Run("polars", variant, None, None, pending="polars-deltalake not installed"))
    try:
        import pyspark  # noqa: F401
        out.append(Run("spark", variant, None,
                       [ctx.python, str(BENCH_DIR / "spark_cdf_p11.py"), "read", t, str(START), str(END)],
                       expect_rows=rows, warmup=0, max_repeats=3,
                       note="warm session, readChangeFeed to the noop sink"))
    except ImportError:
        out.append(Run("spark", variant, None, None, pending="pyspark not installed"))
    return out
