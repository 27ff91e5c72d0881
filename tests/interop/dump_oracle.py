#!/usr/bin/env python3
"""Dump Spark's own view of the interop tables as oracle files (format: tests/interop/README.md).

Usage: dump_oracle.py OUTDIR [NAME ...]

For every generated table OUTDIR/<name>/ (see gen_tables.py) writes OUTDIR/<name>/oracle.json and
OUTDIR/<name>/rows/*.jsonl, using Delta-Spark's Scala API through py4j (DeltaLog.forTable ->
getSnapshotAt(v) for every version) and DataFrame reads (versionAsOf, timestampAsOf, filters).
Skips a table whose oracle.json already exists (delete it, or pass --force, to redo).
"""
import calendar
import datetime as dt
import decimal
import json
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

ORACLE_FORMAT = "dk-interop-oracle/1"
_DEC_CTX = decimal.Context(prec=200)


# ---------------------------------------------------------------------------------------------
# value encoding (same as /work/shared/testdata/manifest.json -> encoding)

def _float(x):
    if x is None:
        return None
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return x


def encode_value(v, t):
    """Encode one Python value collected from Spark with Spark data type t."""
    from pyspark.sql import types as T
    if v is None:
        return None
    if isinstance(t, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return int(v)
    if isinstance(t, (T.FloatType, T.DoubleType)):
        return _float(float(v))
    if isinstance(t, T.DecimalType):
        q = decimal.Decimal(1).scaleb(-t.scale)
        return format(v.quantize(q, context=_DEC_CTX), "f")
    if isinstance(t, T.StringType):
        return v
    if isinstance(t, T.BinaryType):
        return bytes(v).hex()
    if isinstance(t, T.BooleanType):
        return bool(v)
    if isinstance(t, T.DateType):
        return "%04d-%02d-%02d" % (v.year, v.month, v.day)
    if isinstance(t, T.TimestampType):
        # collected as a naive local datetime; the process runs with TZ=UTC (sparkenv.get_spark)
        return calendar.timegm(v.timetuple()) * 1000000 + v.microsecond
    if isinstance(t, T.TimestampNTZType):
        return calendar.timegm(v.timetuple()) * 1000000 + v.microsecond
    if isinstance(t, T.ArrayType):
        return [encode_value(x, t.elementType) for x in v]
    if isinstance(t, T.MapType):
        pairs = [[encode_value(k, t.keyType), encode_value(x, t.valueType)] for k, x in v.items()]
        pairs.sort(key=lambda p: canon(p[0]))
        return pairs
    if isinstance(t, T.StructType):
        return {f.name: encode_value(v[i], f.dataType) for i, f in enumerate(t.fields)}
    raise TypeError("unsupported type %r" % t)


def canon(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, sort_keys=False)


def encode_rows(df):
    schema = df.schema
    rows = [canon({f.name: encode_value(r[i], f.dataType) for i, f in enumerate(schema.fields)})
            for r in df.collect()]
    rows.sort()
    return rows


def write_rows(tdir, rel, rows):
    p = os.path.join(tdir, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(r + "\n")


# ---------------------------------------------------------------------------------------------
# JVM helpers

def _seq_to_list(jvm, seq):
    return list(jvm.scala.jdk.javaapi.CollectionConverters.asJava(seq))


def _none(jvm):
    return jvm.scala.Option.apply(None)


def snapshot_at(jvm, dl, v):
    return dl.getSnapshotAt(v, getattr(dl, "getSnapshotAt$default$2")(),
                            getattr(dl, "getSnapshotAt$default$3")(),
                            getattr(dl, "getSnapshotAt$default$4")())


def _action_body(json_text):
    d = json.loads(json_text)
    return next(iter(d.values()))


def file_entry(jvm, add, table_root):
    a = _action_body(add.json())
    stats = json.loads(a["stats"]) if a.get("stats") else None
    e = {
        "path": a["path"],
        "size": a["size"],
        "partition_values": a.get("partitionValues", {}),
        "modification_time": a.get("modificationTime"),
        "num_records": stats.get("numRecords") if stats else None,
        "stats": a.get("stats"),
        "deletion_vector": None,
        "base_row_id": a.get("baseRowId"),
        "default_row_commit_version": a.get("defaultRowCommitVersion"),
        "tags": a.get("tags"),
    }
    dvd = a.get("deletionVector")
    if dvd:
        jdv = add.deletionVector()
        dv = dict(dvd)
        if dvd.get("storageType") in ("u", "p"):
            dv["absolute_path"] = str(jdv.absolutePath(jvm.org.apache.hadoop.fs.Path(table_root)))
        e["deletion_vector"] = dv
    return e


def snapshot_entry(jvm, snap, table_root):
    meta = _action_body(snap.metadata().json())
    proto = _action_body(snap.protocol().json())
    files = [file_entry(jvm, add, table_root) for add in snap.allFiles().collectAsList()]
    files.sort(key=lambda f: f["path"])
    seg = snap.logSegment()
    ckpt_v = seg.checkpointProvider().version()
    domains = None
    if "domainMetadata" in (proto.get("writerFeatures") or []):
        # computing these runs a Spark job over the state: only where the feature is on
        domains = [_action_body(d.json()) for d in _seq_to_list(jvm, snap.domainMetadata())]
        domains.sort(key=lambda d: d.get("domain", ""))
    return {
        "version": snap.version(),
        "timestamp_ms": snap.timestamp(),
        "protocol": {
            "min_reader_version": proto["minReaderVersion"],
            "min_writer_version": proto["minWriterVersion"],
            "reader_features": sorted(proto["readerFeatures"]) if "readerFeatures" in proto else None,
            "writer_features": sorted(proto["writerFeatures"]) if "writerFeatures" in proto else None,
        },
        "metadata": {
            "id": meta.get("id"),
            "name": meta.get("name"),
            "description": meta.get("description"),
            "format": meta.get("format"),
            "schema_string": meta["schemaString"],
            "schema": json.loads(meta["schemaString"]),
            "partition_columns": meta.get("partitionColumns", []),
            "configuration": meta.get("configuration", {}),
            "created_time": meta.get("createdTime"),
        },
        "checkpoint_version": ckpt_v if ckpt_v >= 0 else None,
        "delta_versions_replayed": [int(os.path.basename(str(fs.getPath()))[:20])
                                    for fs in _seq_to_list(jvm, seg.deltas())],
        "num_files": len(files),
        "total_size": sum(f["size"] for f in files),
        "files": files,
        "domain_metadata": domains,
    }


def scan_metrics(df):
    """Run df and return (rows, {metric: value}) summed over the file-scan leaves of the plan."""
    rows = encode_rows(df)
    plan = df._jdf.queryExecution().executedPlan()
    jvm = df.sparkSession._jvm
    out = {}
    for leaf in _seq_to_list(jvm, plan.collectLeaves()):
        if "Scan" not in leaf.nodeName():
            continue
        m = leaf.metrics()
        for key in ("numFiles", "numOutputRows", "filesSize", "numPartitions",
                    "numRowsDeletedByDV"):
            opt = m.get(key)
            if opt.isDefined():
                out[key] = out.get(key, 0) + int(opt.get().value())
    return rows, out


# ---------------------------------------------------------------------------------------------

def log_listing(table_root):
    log = os.path.join(table_root, "_delta_log")
    out = []
    for dirpath, _dirs, names in os.walk(log):
        for n in names:
            if n.startswith("."):  # Hadoop local-FS checksum files (.x.json.crc), not Delta's
                continue
            p = os.path.join(dirpath, n)
            st = os.stat(p)
            out.append({"name": os.path.relpath(p, log), "size": st.st_size,
                        "mtime_ms": st.st_mtime_ns // 1000000})
    out.sort(key=lambda e: e["name"])
    return out


def _fmt_ts(ms):
    d = dt.datetime.fromtimestamp(ms / 1000.0, dt.timezone.utc)
    return d.strftime("%Y-%m-%d %H:%M:%S.") + "%03d" % (ms % 1000)


def time_travel(spark, dl, table_root, snaps):
    jvm = spark._jvm
    times = sorted({s["timestamp_ms"] for s in snaps})
    cands = {times[0] - 1000, times[-1] + 86400000}
    for t in times:
        cands.update((t - 1, t, t + 1))
    for a, b in zip(times, times[1:]):
        cands.add((a + b) // 2)
    out = []
    for ms in sorted(cands):
        e = {"timestamp_ms": ms, "timestamp": _fmt_ts(ms)}
        try:
            c = dl.history().getActiveCommitAtTime(jvm.java.sql.Timestamp(ms), _none(jvm),
                                                   False, True, False)
            e["history_version"] = c.version()
            e["history_commit_timestamp_ms"] = c.timestamp()
        except Exception as ex:  # noqa: BLE001
            e["history_version"] = None
            e["history_error"] = _err_class(ex)
        try:
            df = spark.read.format("delta").option("timestampAsOf", e["timestamp"]).load(table_root)
            rows = encode_rows(df)
            e["read_row_count"] = len(rows)
            e["read_rows_sha"] = _rows_key(rows)
            e["read_error"] = None
        except Exception as ex:  # noqa: BLE001
            e["read_row_count"] = None
            e["read_error"] = _err_class(ex)
        # which version's rows did timestampAsOf return? (match against versionAsOf row sets)
        e["read_version"] = None
        if e["read_error"] is None:
            for s in snaps:
                if s.get("_rows_key") == e["read_rows_sha"]:
                    e["read_version"] = s["version"]
            del e["read_rows_sha"]
        out.append(e)
    return out


def _rows_key(rows):
    import hashlib
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()


def _err_class(ex):
    s = str(ex)
    for tok in s.replace("[", " [").split():
        if tok.startswith("[") and tok.endswith("]") and tok[1:-1].replace("_", "").isalnum():
            return tok[1:-1]
    return s.splitlines()[0][:200] if s else type(ex).__name__


def dump_table(spark, tdir, spec):
    jvm = spark._jvm
    table_root = os.path.join(tdir, "delta")
    with open(os.path.join(tdir, "gen.json")) as f:
        gen = json.load(f)
    jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()
    dl = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, table_root)
    latest = dl.update(False, _none(jvm), _none(jvm)).version()
    row_tracking = spec.get("row_tracking", False)
    snaps = []
    for v in range(0, latest + 1):
        snap = snapshot_at(jvm, dl, v)
        s = snapshot_entry(jvm, snap, table_root)
        df = spark.read.format("delta").option("versionAsOf", v).load(table_root)
        if row_tracking:
            df = df.selectExpr("*", "_metadata.row_id AS _row_id",
                               "_metadata.row_commit_version AS _row_commit_version")
        rows = encode_rows(df)
        rel = "rows/v%d.jsonl" % v
        write_rows(tdir, rel, rows)
        s["rows_file"] = rel
        s["row_count"] = len(rows)
        s["row_columns"] = [f.name for f in df.schema.fields]
        if spec.get("time_travel"):
            s["_rows_key"] = _rows_key(rows)
        snaps.append(s)
    queries = []
    for qname, pred in spec.get("filters", []):
        df = spark.read.format("delta").load(table_root).where(pred)
        rows, metrics = scan_metrics(df)
        rel = "rows/q_%s.jsonl" % qname
        write_rows(tdir, rel, rows)
        queries.append({"name": qname, "predicate": pred, "version": latest,
                        "rows_file": rel, "row_count": len(rows),
                        "files_scanned": metrics.get("numFiles"), "scan_metrics": metrics})
    tt = time_travel(spark, dl, table_root, snaps) if spec.get("time_travel") else None
    history = [{"version": r["version"], "timestamp_ms": int(
        calendar.timegm(r["timestamp"].timetuple()) * 1000 + r["timestamp"].microsecond // 1000),
        "operation": r["operation"]}
        for r in spark.sql("DESCRIBE HISTORY delta.`%s`" % table_root)
        .select("version", "timestamp", "operation").collect()]
    history.sort(key=lambda h: h["version"])
    for s in snaps:
        s.pop("_rows_key", None)
    from sparkenv import versions
    oracle = {
        "format": ORACLE_FORMAT,
        "table": spec["name"],
        "table_root": "delta",
        "writer": "delta-rs" if spec["name"] == "deltars" else "delta-spark",
        "generator": gen,
        "tools": versions(),
        "latest_version": latest,
        "row_tracking": row_tracking,
        "log_files": log_listing(table_root),
        "history": history,
        "snapshots": snaps,
        "queries": queries,
        "time_travel": tt,
    }
    tmp = os.path.join(tdir, "oracle.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(oracle, f, indent=1, ensure_ascii=False)
    os.replace(tmp, os.path.join(tdir, "oracle.json"))


def dump(spark, outdir, names=None, force=False, log=print):
    from gen_tables import TABLES
    timings = {}
    for spec in TABLES:
        name = spec["name"]
        if names and name not in names:
            continue
        tdir = os.path.join(outdir, name)
        if not os.path.exists(os.path.join(tdir, "DONE")):
            raise RuntimeError("table %s not generated (run gen_tables.py first)" % name)
        if os.path.exists(os.path.join(tdir, "oracle.json")) and not force:
            continue
        t0 = time.time()
        dump_table(spark, tdir, spec)
        timings[name] = round(time.time() - t0, 2)
        log(f"dump {name}: {timings[name]}s")
    return timings


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    from sparkenv import get_spark
    t0 = time.time()
    spark = get_spark("dk-interop-dump")
    dump(spark, os.path.abspath(args[0]), set(args[1:]) or None, force="--force" in argv)
    print(f"dump total {time.time() - t0:.1f}s")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
