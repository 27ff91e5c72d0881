"""P11b "refresh" (issue #19): query latency on a big table after one new commit — a cached
snapshot refreshed incrementally versus loading the table afresh.

Input: a hard-linked copy of P1's 100k-file table (bench/snapshot_load.py: checkpoint at v100
plus 100 JSON commits; data files do not exist, this is a log benchmark) in
bench/cache/refresh-100k/, and one new commit (bench/cache/refresh-100k.commit.json:
commitInfo, 10 adds of new files, 5 removes of live ones) that every run publishes as v201 and
removes again. `--sizes` picks other P1 sizes (10k, 1m).

Systems (fresh process per repeat; the clock starts when the commit is already there and
stops when the system holds the new version's snapshot; the pass over its file list that a
query's planning then makes is reported apart as pass_seconds, in the .json results):
  dk        bench_refresh TABLE COMMIT: dk_snapshot_update of the snapshot loaded before the
            commit (what dk.Table, the SQLite vtab and the Spark connector's SnapshotCache do
            per query)
  dk-full   bench_refresh TABLE COMMIT --full: dk_snapshot_open (no cache)
  delta-rs  DeltaTable.update_incremental() (bench/workers.py); pass: get_add_actions
  spark     DeltaLog.update() in a warm session (bench/spark_refresh.py; JVM start and the
            first load are not timed); pass: snapshot.allFiles.count() (Delta computes the
            new state lazily, so its update alone does not hold the file list yet)
  dk-base   (when DK_BENCH_BASE names another build directory) dk and dk-full built from
            another commit: before/after in one run
Targets: dk >= 20x dk-full and >= 5x delta-rs.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

NAME = "refresh_p11b"
DEFAULT_SIZES = ["100k"]


def _link_copy(src: Path, dst: Path) -> None:
    tmp = dst.with_name(dst.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    subprocess.run(["cp", "-al", str(src), str(tmp)], check=True)
    # _delta_log itself must be a directory of our own (we add/remove a file in it); the
    # files inside stay hard links and are never written
    tmp.rename(dst)


def _commit(root: Path, facts: dict) -> str:
    """commitInfo + 10 adds of new files + 5 removes of live files of the last commit."""
    last = root / "_delta_log" / ("%020d.json" % facts["version"])
    adds = [json.loads(ln)["add"] for ln in last.read_text().splitlines()
            if ln.startswith('{"add"')]
    r = random.Random(11)
    lines = [json.dumps({"commitInfo": {"timestamp": 1_800_000_000_000, "operation": "WRITE",
                                        "operationParameters": {"mode": "Append"},
                                        "isBlindAppend": False}})]
    for a in adds[:5]:
        lines.append(json.dumps({"remove": {"path": a["path"], "deletionTimestamp":
                                            1_800_000_000_000, "dataChange": True,
                                            "partitionValues": a["partitionValues"],
                                            "size": a["size"]}}))
    for i in range(10):
        a = dict(adds[i % len(adds)])
        a["path"] = "date=2024-01-01/part-p11b-%05d-%08x.snappy.parquet" % (i, r.getrandbits(32))
        a["partitionValues"] = {"date": "2024-01-01"}
        lines.append(json.dumps({"add": a}))
    return "\n".join(lines) + "\n"


def prepare(ctx):
    from run import CACHE, Prepared
    import snapshot_load
    labels = [s for s in (ctx.sizes or DEFAULT_SIZES) if s in snapshot_load.SIZES]
    tables, info, facts_by = {}, {}, {}
    for label in labels:
        src, facts = snapshot_load.ensure_table(label)
        dst = CACHE / f"refresh-{label}"
        if not dst.exists():
            _link_copy(src, dst)
        commit = CACHE / f"refresh-{label}.commit.json"
        if not commit.exists():
            commit.write_text(_commit(dst, facts))
        stale = dst / "_delta_log" / ("%020d.json" % (facts["version"] + 1))
        if stale.exists():  # left by an interrupted run
            stale.unlink()
        tables[label] = (str(dst), str(commit))
        facts_by[label] = facts
        info[f"{label} table"] = (f"{facts['live_files']} live files at v{facts['version']} "
                                  f"(P1's table); new commit: +10/-5 files")
    return Prepared(warm_files=[Path(p) / "_delta_log" for p, _ in tables.values()],
                    info=info, data={"tables": tables, "facts": facts_by})


def runs(ctx, prep):
    from run import Run
    import snapshot_load
    spark, spark_why = snapshot_load._spark_cmd(ctx)
    if spark and not os.environ.get("DK_BENCH_SPARK_SNAPSHOT_CMD"):
        spark = [ctx.python, str(Path(__file__).resolve().parent / "spark_refresh.py")]
    out = []
    for label, (path, commit) in prep.data["tables"].items():
        want = prep.data["facts"][label]["live_files"] + 5
        variant = f"{label} files +1 commit"
        drv = str(ctx.dk_exe("bench_refresh"))
        out.append(Run("dk", variant, None, [drv, path, commit], expect_rows=want,
                       note="cached snapshot + dk_snapshot_update"))
        out.append(Run("dk-full", variant, None, [drv, path, commit, "--full"],
                       expect_rows=want, note="dk_snapshot_open, no cache"))
        base = os.environ.get("DK_BENCH_BASE")
        if base:  # before/after in one run: the same driver built from another commit
            bdrv = str(Path(base) / "bench_refresh")
            out.append(Run("dk-base", variant, None, [bdrv, path, commit], expect_rows=want,
                           note=f"dk of DK_BENCH_BASE={base}"))
            out.append(Run("dk-base-full", variant, None, [bdrv, path, commit, "--full"],
                           expect_rows=want, note="the same, dk_snapshot_open"))
        out.append(Run("delta-rs", variant, None, ctx.worker("deltalake_refresh", path, commit),
                       expect_rows=want, note="update_incremental (get_add_actions apart)"))
        if spark:
            out.append(Run("spark", variant, None, [*spark, path, commit], expect_rows=want,
                           warmup=0, max_repeats=3,
                           note="warm session: DeltaLog.update (allFiles.count apart)"))
        else:
            out.append(Run("spark", variant, None, None, pending=spark_why))
    return out
