"""P1 "snapshot_load" (issue #3): load the latest snapshot of a big Delta table, list its files.

Inputs: synthetic Delta tables with 10k, 100k and 1M live files, cached under bench/cache/
(`--sizes 10k,100k,1m` picks some). Each has a classic single-file checkpoint at version 100
(written with pyarrow in the exact checkpoint schema a Delta-Spark 3.x writer uses: txn, add,
remove, metaData, protocol, domainMetadata; the add rows carry Spark-style JSON stats
strings, partition values and sizes; 5% of the checkpoint rows are remove tombstones) plus
100 JSON commits (versions 101..200) each with a commitInfo, adds and removes of files from
the checkpoint. The table is partitioned by a date string; data files do not exist (this is
a log benchmark). Deterministic (seeded).

Systems (fresh process per repeat):
  delta-rs  DeltaTable(path).get_add_actions(flatten=True), iterated (bench/workers.py)
  dk        bench_snapshot_load TABLE (C driver, bench/snapshot_load.c): dk_table_open +
            dk_snapshot_open + dk_snapshot_file() over every file; "pending" without the API
  dk-cli    `dk files TABLE --json > /dev/null` (wall time, includes JSON formatting);
            "pending" while the dk binary lacks the command
  spark     cold JVM per run (bench/spark_snapshot.py): SparkSession start (reported apart as
            jvm_start_seconds), then DeltaLog.forTable(spark, TABLE).update() and
            snapshot.allFiles.count() (Delta's state reconstruction over every file);
            "pending" when pyspark/delta-spark or Java 17/21 are missing
            (scripts/install_spark.sh). DK_BENCH_SPARK_SNAPSHOT_CMD overrides the command
            (it takes TABLE and prints {"seconds": ..., "rows": ...}). No warm-up run and at
            most 3 timed runs per size (one run takes minutes at 1M files).
  delta-kernel-rs  bench_kernel_rs files TABLE (bench/kernel_rs, the delta_kernel crate with
            its default engine, built by cargo on first use: bench/kernel_rs_rival.py):
            Snapshot::builder_for + build, then scan_metadata() over the latest snapshot with
            every selected file visited (path, size); "pending" without cargo.
"""

from __future__ import annotations

import json
import os
import random
import shlex
import subprocess
import sys
import time
import uuid
from pathlib import Path

NAME = "snapshot_load"
SIZES = {"10k": 10_000, "100k": 100_000, "1m": 1_000_000}
CHECKPOINT_VERSION = 100
N_COMMITS = 100
SEED = 3
BASE_TIME_MS = 1_700_000_000_000

TABLE_SCHEMA = {"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": {}},
    {"name": "value", "type": "double", "nullable": True, "metadata": {}},
    {"name": "name", "type": "string", "nullable": True, "metadata": {}},
    {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}},
    {"name": "date", "type": "string", "nullable": True, "metadata": {}},
]}


def _checkpoint_arrow_schema():
    """The classic checkpoint schema of a Delta-Spark 3.x writer (see PROTOCOL.md)."""
    import pyarrow as pa
    smap = pa.map_(pa.string(), pa.string())
    dv = pa.struct([("storageType", pa.string()), ("pathOrInlineDv", pa.string()),
                    ("offset", pa.int32()), ("sizeInBytes", pa.int32()),
                    ("cardinality", pa.int64()), ("maxRowIndex", pa.int64())])
    return pa.schema([
        ("txn", pa.struct([("appId", pa.string()), ("version", pa.int64()),
                           ("lastUpdated", pa.int64())])),
        ("add", pa.struct([("path", pa.string()), ("partitionValues", smap),
                           ("size", pa.int64()), ("modificationTime", pa.int64()),
                           ("dataChange", pa.bool_()), ("tags", smap), ("deletionVector", dv),
                           ("baseRowId", pa.int64()), ("defaultRowCommitVersion", pa.int64()),
                           ("stats", pa.string())])),
        ("remove", pa.struct([("path", pa.string()), ("deletionTimestamp", pa.int64()),
                              ("dataChange", pa.bool_()), ("extendedFileMetadata", pa.bool_()),
                              ("partitionValues", smap), ("size", pa.int64()),
                              ("deletionVector", dv), ("baseRowId", pa.int64()),
                              ("defaultRowCommitVersion", pa.int64())])),
        ("metaData", pa.struct([("id", pa.string()), ("name", pa.string()),
                                ("description", pa.string()),
                                ("format", pa.struct([("provider", pa.string()),
                                                      ("options", smap)])),
                                ("schemaString", pa.string()),
                                ("partitionColumns", pa.list_(pa.string())),
                                ("configuration", smap), ("createdTime", pa.int64())])),
        ("protocol", pa.struct([("minReaderVersion", pa.int32()),
                                ("minWriterVersion", pa.int32()),
                                ("readerFeatures", pa.list_(pa.string())),
                                ("writerFeatures", pa.list_(pa.string()))])),
        ("domainMetadata", pa.struct([("domain", pa.string()), ("configuration", pa.string()),
                                      ("removed", pa.bool_())])),
    ])


class _Gen:
    """Deterministic file names, stats and sizes."""

    def __init__(self, n_partitions: int, seed: int):
        self.rng = random.Random(seed)
        self.n_partitions = n_partitions
        self.next_id = 0

    def uid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def date(self, i: int) -> str:
        d = 18262 + (i % self.n_partitions)  # days since epoch from 2020-01-01
        import datetime as dt
        return (dt.date(1970, 1, 1) + dt.timedelta(days=d)).isoformat()

    def file(self, i: int) -> dict:
        """An add action (as a dict with stats text) for the i-th file."""
        r = self.rng
        date = self.date(i)
        n = r.randint(50_000, 2_000_000)
        lo = self.next_id
        self.next_id += n
        v0, v1 = round(r.uniform(-1e6, 0), 3), round(r.uniform(0, 1e6), 3)
        stats = ('{"numRecords":%d,"minValues":{"id":%d,"value":%r,"name":"a%05d",'
                 '"ts":"%sT00:00:00.000Z"},"maxValues":{"id":%d,"value":%r,"name":"z%05d",'
                 '"ts":"%sT23:59:59.999Z"},"nullCount":{"id":0,"value":%d,"name":%d,"ts":0}}'
                 % (n, lo, v0, r.randrange(100000), date, lo + n - 1, v1, r.randrange(100000),
                    date, r.randrange(100), r.randrange(1000)))
        part = r.randrange(1000)
        return {"path": f"date={date}/part-{part:05d}-{self.uid()}.c000.snappy.parquet",
                "partitionValues": {"date": date}, "size": n * 8 + r.randrange(1 << 20),
                "modificationTime": BASE_TIME_MS + i * 37, "dataChange": True,
                "stats": stats}


def _commit_info(version: int, ts: int, n_add: int, n_remove: int, g: _Gen) -> dict:
    return {"commitInfo": {
        "timestamp": ts, "operation": "MERGE" if n_remove else "WRITE",
        "operationParameters": {"predicate": "[\"(id#1 = id#2)\"]", "matchedPredicates":
                                "[{\"actionType\":\"update\"}]"} if n_remove else
        {"mode": "Append", "partitionBy": "[\"date\"]"},
        "readVersion": version - 1, "isolationLevel": "Serializable",
        "isBlindAppend": not n_remove,
        "operationMetrics": {"numFiles": str(n_add), "numRemovedFiles": str(n_remove),
                             "numOutputRows": str(n_add * 1000)},
        "engineInfo": "Apache-Spark/3.5.1 Delta-Lake/3.2.0", "txnId": g.uid()}}


def make_table(root: Path, n_live: int, seed: int = SEED) -> dict:
    """Writes the synthetic table; returns facts about it (live files, checkpoint rows)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    log = root / "_delta_log"
    log.mkdir(parents=True)
    per_commit_add = max(10, n_live // 1000)
    per_commit_remove = per_commit_add // 2
    n_ckpt_adds = n_live - N_COMMITS * (per_commit_add - per_commit_remove)
    n_tombstones = n_live // 20
    g = _Gen(n_partitions=max(10, n_live // 1000), seed=seed)

    # -- checkpoint at CHECKPOINT_VERSION --------------------------------------------------
    adds = [g.file(i) for i in range(n_ckpt_adds)]
    tombs = [g.file(n_ckpt_adds + i) for i in range(n_tombstones)]
    schema = _checkpoint_arrow_schema()
    ckpt_time = BASE_TIME_MS + n_live * 40
    n_txn = 3
    n_head = 2 + n_txn  # protocol, metaData, txns
    n_rows = n_head + len(adds) + len(tombs)

    def placed(values: pa.Array, start: int) -> pa.Array:
        parts = []
        if start:
            parts.append(pa.nulls(start, values.type))
        parts.append(values)
        tail = n_rows - start - len(values)
        if tail:
            parts.append(pa.nulls(tail, values.type))
        return pa.concat_arrays(parts)

    def pv_map(ds: list[str]) -> pa.Array:
        offs = pa.array(range(0, len(ds) + 1), pa.int32())
        return pa.MapArray.from_arrays(offs, pa.array(["date"] * len(ds)), pa.array(ds))

    f_add = schema.field("add").type
    add_arr = pa.StructArray.from_arrays([
        pa.array([a["path"] for a in adds]),
        pv_map([a["partitionValues"]["date"] for a in adds]),
        pa.array([a["size"] for a in adds], pa.int64()),
        pa.array([a["modificationTime"] for a in adds], pa.int64()),
        pa.array([False] * len(adds)),
        pa.nulls(len(adds), f_add.field("tags").type),
        pa.nulls(len(adds), f_add.field("deletionVector").type),
        pa.nulls(len(adds), pa.int64()), pa.nulls(len(adds), pa.int64()),
        pa.array([a["stats"] for a in adds]),
    ], fields=list(f_add))
    f_rm = schema.field("remove").type
    rm_arr = pa.StructArray.from_arrays([
        pa.array([t["path"] for t in tombs]),
        pa.array([ckpt_time - 3_600_000 - i for i in range(len(tombs))], pa.int64()),
        pa.array([True] * len(tombs)),
        pa.array([True] * len(tombs)),
        pv_map([t["partitionValues"]["date"] for t in tombs]),
        pa.array([t["size"] for t in tombs], pa.int64()),
        pa.nulls(len(tombs), f_rm.field("deletionVector").type),
        pa.nulls(len(tombs), pa.int64()), pa.nulls(len(tombs), pa.int64()),
    ], fields=list(f_rm))
    meta = {"id": g.uid(), "name": None, "description": None,
            "format": {"provider": "parquet", "options": []},
            "schemaString": json.dumps(TABLE_SCHEMA, separators=(",", ":")),
            "partitionColumns": ["date"],
            "configuration": [("delta.checkpointInterval", "100"),
                              ("delta.logRetentionDuration", "interval 30 days")],
            "createdTime": BASE_TIME_MS - 86_400_000}
    meta_arr = pa.array([meta], schema.field("metaData").type)
    proto_arr = pa.array([{"minReaderVersion": 1, "minWriterVersion": 2,
                           "readerFeatures": None, "writerFeatures": None}],
                         schema.field("protocol").type)
    txn_arr = pa.array([{"appId": f"stream-{i}", "version": 1000 + i,
                         "lastUpdated": ckpt_time - i} for i in range(n_txn)],
                       schema.field("txn").type)
    table = pa.table({
        "txn": placed(txn_arr, 2),
        "add": placed(add_arr, n_head),
        "remove": placed(rm_arr, n_head + len(adds)),
        "metaData": placed(meta_arr, 1),
        "protocol": placed(proto_arr, 0),
        "domainMetadata": pa.nulls(n_rows, schema.field("domainMetadata").type),
    }, schema=schema)
    ck = log / f"{CHECKPOINT_VERSION:020d}.checkpoint.parquet"
    pq.write_table(table, ck, compression="snappy")
    (log / "_last_checkpoint").write_text(json.dumps(
        {"version": CHECKPOINT_VERSION, "size": n_rows, "sizeInBytes": ck.stat().st_size,
         "numOfAddFiles": len(adds)}, separators=(",", ":")))

    # -- JSON commits CHECKPOINT_VERSION+1 .. +N_COMMITS ------------------------------------
    live_from_ckpt = list(range(len(adds)))
    g.rng.shuffle(live_from_ckpt)
    next_file = n_ckpt_adds + n_tombstones
    for k in range(1, N_COMMITS + 1):
        version = CHECKPOINT_VERSION + k
        ts = ckpt_time + k * 60_000
        lines = [_commit_info(version, ts, per_commit_add, per_commit_remove, g)]
        for _ in range(per_commit_remove):
            a = adds[live_from_ckpt.pop()]
            lines.append({"remove": {"path": a["path"], "deletionTimestamp": ts,
                                     "dataChange": True, "extendedFileMetadata": True,
                                     "partitionValues": a["partitionValues"],
                                     "size": a["size"]}})
        for _ in range(per_commit_add):
            f = g.file(next_file)
            f["modificationTime"] = ts - 1000
            next_file += 1
            lines.append({"add": f})
        with open(log / f"{version:020d}.json", "w") as fh:
            fh.write("\n".join(json.dumps(x, separators=(",", ":")) for x in lines) + "\n")
    live = len(live_from_ckpt) + N_COMMITS * per_commit_add
    assert live == n_live, (live, n_live)
    return {"live_files": live, "checkpoint_rows": n_rows, "checkpoint_adds": len(adds),
            "tombstones": n_tombstones, "commits": N_COMMITS,
            "adds_per_commit": per_commit_add, "removes_per_commit": per_commit_remove,
            "version": CHECKPOINT_VERSION + N_COMMITS,
            "checkpoint_mib": round(ck.stat().st_size / 2**20, 1)}


def ensure_table(label: str) -> tuple[Path, dict]:
    from run import CACHE
    n = SIZES[label]
    root = CACHE / f"snapshot-{label}-seed{SEED}"
    facts_file = root / ".facts.json"
    if not facts_file.exists():
        if root.exists():
            import shutil
            shutil.rmtree(root)
        tmp = root.with_name(root.name + ".tmp")
        if tmp.exists():
            import shutil
            shutil.rmtree(tmp)
        print(f"   generating {root.name} ({n} live files) ...", flush=True)
        t0 = time.perf_counter()
        facts = make_table(tmp, n)
        facts["generation_seconds"] = round(time.perf_counter() - t0, 1)
        (tmp / ".facts.json").write_text(json.dumps(facts))
        tmp.rename(root)
        print(f"   generated in {facts['generation_seconds']}s", flush=True)
    return root, json.loads(facts_file.read_text())


def prepare(ctx):
    from run import Prepared
    labels = [s for s in (ctx.sizes or list(SIZES)) if s in SIZES] if ctx else list(SIZES)
    tables, info, facts_by = {}, {}, {}
    for label in labels:
        root, facts = ensure_table(label)
        tables[label] = str(root)
        facts_by[label] = facts
        info[f"{label} table"] = (f"{facts['live_files']} live files at v{facts['version']}; "
                                  f"checkpoint v{CHECKPOINT_VERSION}: {facts['checkpoint_rows']} "
                                  f"rows ({facts['checkpoint_mib']} MiB), "
                                  f"{facts['commits']} JSON commits of "
                                  f"+{facts['adds_per_commit']}/-{facts['removes_per_commit']}")
    from kernel_rs_rival import ensure_kernel_rs
    kexe, kwhy = ensure_kernel_rs() if ctx is None or ctx.want("delta-kernel-rs") else (None, "")
    return Prepared(warm_files=[Path(p) / "_delta_log" for p in tables.values()],
                    info=info, data={"tables": tables, "facts": facts_by,
                                     "kernel_rs": kexe and str(kexe), "kernel_rs_why": kwhy})


def _dk_has(ctx, *words) -> bool:
    exe = ctx.dk_exe("dk")
    if not exe.exists():
        return False
    p = subprocess.run([str(exe), *words], capture_output=True, stdin=subprocess.DEVNULL)
    err = p.stderr.decode("utf-8", "replace").lower()
    return not any(s in err for s in ("unknown command", "unknown subcommand", "not built yet",
                                      "not implemented"))


def dk_file_count(dk: str, path: str) -> int:
    """Number of files `dk files PATH --json` lists (counted in its output, not parsed)."""
    # streamed, so that this (runner) process stays small
    key = b'{"path":'
    n, tail = 0, b""
    with subprocess.Popen([dk, "files", path, "--json"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE) as p:
        while True:
            chunk = p.stdout.read(1 << 20)
            if not chunk:
                break
            buf = tail + chunk
            n += buf.count(key)
            tail = buf[-(len(key) - 1):]  # too short to hold a whole key: no double count
        err = p.stderr.read()
    if p.returncode != 0:
        raise RuntimeError(err.decode("utf-8", "replace").strip()[-300:])
    return n


def _spark_cmd(ctx) -> tuple[list[str] | None, str]:
    """argv prefix of the Spark row, or (None, why it is pending)."""
    hook = os.environ.get("DK_BENCH_SPARK_SNAPSHOT_CMD")
    if hook:
        return shlex.split(hook), ""
    import importlib.util
    if not (importlib.util.find_spec("pyspark") and importlib.util.find_spec("delta")):
        return None, "pyspark/delta-spark not installed (scripts/install_spark.sh)"
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "interop"))
    try:
        from sparkenv import ensure_java_home
        ensure_java_home()
    except RuntimeError as e:
        return None, str(e)
    return [ctx.python, str(Path(__file__).resolve().parent / "spark_snapshot.py")], ""


def runs(ctx, prep):
    from run import Run
    tables = prep.data["tables"]
    have_dk = _dk_has(ctx, "files")
    spark, spark_why = _spark_cmd(ctx)
    out = []
    for label, path in tables.items():
        variant = f"{label} files"
        want = prep.data["facts"][label]["live_files"]
        out.append(Run("dk", variant, None,
                       [str(ctx.dk_exe("bench_snapshot_load")), path], expect_rows=want,
                       note="C driver: load + iterate dk_snapshot_file()"))
        if have_dk:
            # correctness first (untimed): dk must list exactly the live files
            try:
                got = dk_file_count(str(ctx.dk_exe("dk")), path)
                err = None if got == want else f"dk files lists {got} files, expected {want}"
            except RuntimeError as e:
                err = f"dk files failed: {e}"
            cmd = f"{shlex.quote(str(ctx.dk_exe('dk')))} files {shlex.quote(path)} --json " \
                  "> /dev/null"
            out.append(Run("dk-cli", variant, None, ["/bin/sh", "-c", cmd], mode="wall",
                           error=err,
                           note=f"wall time of `dk files --json > /dev/null`; lists "
                                f"{want} files (checked)"))
        else:
            out.append(Run("dk-cli", variant, None, None,
                           pending="`dk files` not in this dk build"))
        out.append(Run("delta-rs", variant, None, ctx.worker("deltalake_files", path),
                       expect_rows=want))
        kexe = prep.data.get("kernel_rs")
        if kexe:
            out.append(Run("delta-kernel-rs", variant, None, [kexe, "files", path],
                           expect_rows=want,
                           note="delta_kernel 0.30.1, default engine: snapshot + "
                                "scan_metadata, every file visited"))
        else:
            out.append(Run("delta-kernel-rs", variant, None, None,
                           pending=prep.data.get("kernel_rs_why") or "not built"))
        if spark:
            # a cold JVM per run takes minutes at 1M files: no warm-up run, at most 3
            out.append(Run("spark", variant, None, [*spark, path], expect_rows=want,
                           warmup=0, max_repeats=3,
                           note="cold JVM: forTable + update + allFiles.count(); JVM start "
                                "reported apart (jvm_start_seconds)"))
        else:
            out.append(Run("spark", variant, None, None, pending=spark_why))
    return out


if __name__ == "__main__":  # manual: python bench/snapshot_load.py OUTDIR N_LIVE
    print(make_table(Path(sys.argv[1]), int(sys.argv[2])))
