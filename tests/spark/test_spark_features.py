"""Connector behaviour beyond full scans, always against delta-spark in the same session:
pushdown visible in plans (filters, limit, files planned <= delta-spark's), statistics,
time travel (options and SQL through the `dk` catalog), `_metadata`, nested pruning,
dynamic partition pruning, error classes, and native memory after failed reads."""
import datetime
import os
import shutil
import time

import pytest
from pyspark.sql import functions as F

from sparkcmp import assert_same, delta_num_files, dk_files, plan_string

G = "/work/shared/testdata/delta-golden"
PRUNE = os.path.join(G, "hive/deltatbl-partition-prune")        # partitioned by date, city
DV = os.path.join(G, "dv-partitioned-with-checkpoint")          # DVs, partitioned by part
NESTED = os.path.join(G, "data-reader-nested-struct")
VERSIONS = os.path.join(G, "basic-with-inserts-overwrite-restore")


def both(spark, path, **opts):
    a, b = spark.read.format("dk"), spark.read.format("delta")
    for k, v in opts.items():
        a, b = a.option(k, v), b.option(k, v)
    return a.load(path), b.load(path)


def test_partition_filter_pushed_and_files_pruned(spark):
    dk, de = both(spark, PRUNE)
    city = de.select("city").first()[0]
    cond = F.col("city") == city
    assert_same(dk.where(cond), de.where(cond), "partition filter")
    plan = plan_string(dk.where(cond))
    assert "PushedFilters: [" in plan and "(`city` = '" in plan, plan
    sel, total = dk_files(dk.where(cond))
    assert sel < total
    assert sel <= delta_num_files(spark, de.where(cond))
    # partition-only predicates are exact: no Filter above the scan
    assert "Filter" not in plan.split("BatchScan")[0], plan


def test_data_filter_pushed_and_kept_post_scan(spark):
    dk, de = both(spark, DV)
    col = [c for c in de.columns if c != "part"][0]
    v = de.select(col).first()[0]
    cond = F.col(col) == v
    assert_same(dk.where(cond), de.where(cond), "data filter")
    plan = plan_string(dk.where(cond))
    assert "PushedFilters: [" in plan and "(`%s` = " % col in plan, plan
    assert "Filter" in plan.split("BatchScan")[0], plan
    sel, _ = dk_files(dk.where(cond))
    assert sel <= delta_num_files(spark, de.where(cond))


def test_limit_pushed(spark):
    dk, de = both(spark, VERSIONS)
    plan = plan_string(dk.limit(3))
    assert "PushedLimit: 3" in plan, plan
    assert len(dk.limit(3).collect()) == 3


def test_statistics_row_count(spark):
    dk, de = both(spark, DV)
    stats = dk._jdf.queryExecution().optimizedPlan().stats()
    assert stats.rowCount().isDefined()
    assert int(str(stats.rowCount().get())) == de.count()
    assert int(str(stats.sizeInBytes())) > 0


def test_time_travel_version_options_and_sql(spark):
    for v in (0, 1, 2):
        dk, de = both(spark, VERSIONS, versionAsOf=v)
        assert_same(dk, de, f"versionAsOf {v}")
        q = "SELECT * FROM {}.`%s` VERSION AS OF %d" % (VERSIONS, v)
        assert_same(spark.sql(q.format("dk")), spark.sql(q.format("delta")), f"VERSION AS OF {v}")


def test_time_travel_timestamp(spark, tmp_path):
    # copy with mtimes kept (commit time = file mtime), then pin commit mtimes ourselves
    t = str(tmp_path / "t")
    shutil.copytree(VERSIONS, t, copy_function=shutil.copy2)
    log = os.path.join(t, "_delta_log")
    # recent commit times (delta-spark refuses travel beyond deletedFileRetentionDuration)
    base = (int(time.time()) // 86400 - 2) * 86400  # midnight UTC two days ago
    commits = sorted(f for f in os.listdir(log) if f.endswith(".json"))
    for i, f in enumerate(commits):
        os.utime(os.path.join(log, f), (base + 3600 * i, base + 3600 * i))
    day = datetime.datetime.fromtimestamp(base, datetime.timezone.utc).strftime("%Y-%m-%d")
    for hms in ("00:30:00", "01:00:00", "02:59:59"):
        ts = f"{day} {hms}"
        dk, de = both(spark, t, timestampAsOf=ts)
        assert_same(dk, de, f"timestampAsOf {ts}")
        q = "SELECT * FROM {}.`%s` TIMESTAMP AS OF '%s'" % (t, ts)
        assert_same(spark.sql(q.format("dk")), spark.sql(q.format("delta")), f"TIMESTAMP AS OF {ts}")


FILE_FIELDS = ["file_path", "file_name", "file_size", "file_block_start",
               "file_block_length", "file_modification_time"]


@pytest.mark.parametrize("path", [PRUNE, DV, VERSIONS])
def test_metadata_column(spark, path):
    dk, de = both(spark, path)
    cols = [F.col("_metadata." + f).alias(f) for f in FILE_FIELDS]
    data = [c for c in de.columns]
    a = dk.select(*data, *cols)
    b = de.select(*data, *cols)
    assert_same(a, b, "_metadata")
    # row_index (delta-spark does not expose it here): per file, exactly 0..rows-1 without
    # deleted rows, so distinct and below the file's row count
    ri = dk.select("_metadata.file_name", "_metadata.row_index").collect()
    seen = {}
    for name, idx in ri:
        seen.setdefault(name, []).append(idx)
    for name, idxs in seen.items():
        assert len(set(idxs)) == len(idxs) and min(idxs) >= 0


def test_nested_pruning(spark):
    dk, de = both(spark, NESTED)
    struct_col = [f for f in de.schema.fields if f.dataType.typeName() == "struct"][0]
    sub = struct_col.dataType.fields[0].name
    q = lambda df: df.select(F.col(f"{struct_col.name}.{sub}"))
    assert_same(q(dk), q(de), "nested field")


def test_dynamic_partition_pruning(spark):
    dk, de = both(spark, PRUNE)
    cities = [r[0] for r in de.select("city").distinct().collect()]
    dim = spark.createDataFrame([(cities[0], "keep")] + [(c + "_x", "drop") for c in cities],
                                "city string, tag string").where(F.col("tag") == "keep")
    prev = spark.conf.get("spark.sql.optimizer.dynamicPartitionPruning.reuseBroadcastOnly")
    spark.conf.set("spark.sql.optimizer.dynamicPartitionPruning.reuseBroadcastOnly", "false")
    try:
        j_dk = dk.join(dim, "city")
        j_de = de.join(dim, "city")
        assert_same(j_dk, j_de, "DPP join")
        plan = plan_string(j_dk)
        assert "dynamicpruning" in plan.lower(), plan
        m = [l for l in plan.splitlines() if "DkScan" in l and "RuntimeFilters: [" in l]
        assert m, plan
    finally:
        spark.conf.set("spark.sql.optimizer.dynamicPartitionPruning.reuseBroadcastOnly", prev)


def _err(fn):
    with pytest.raises(Exception) as ei:
        fn()
    return str(ei.value)


def test_errors(spark, tmp_path):
    missing = str(tmp_path / "nope")
    msg = _err(lambda: spark.read.format("dk").load(missing).collect())
    assert "DK_TABLE_NOT_FOUND" in msg
    msg = _err(lambda: spark.read.format("dk").load(os.path.join(G, "no-delta-log-folder")).collect())
    assert "DK_TABLE_NOT_FOUND" in msg
    msg = _err(lambda: spark.read.format("dk").option("versionAsOf", 99).load(VERSIONS).collect())
    assert "DK_VERSION_NOT_FOUND" in msg
    msg = _err(lambda: spark.sql("SELECT * FROM dk.`%s` VERSION AS OF 99" % VERSIONS).collect())
    assert "DK_VERSION_NOT_FOUND" in msg
    msg = _err(lambda: spark.read.format("dk").option("timestampAsOf", "1999-01-01 00:00:00")
               .load(VERSIONS).collect())
    assert "DK_TIMESTAMP_OUT_OF_RANGE" in msg
    msg = _err(lambda: spark.read.format("dk").load(os.path.join(G, "deltalog-invalid-protocol-version")).collect())
    assert "DK_UNSUPPORTED_FEATURE" in msg
    msg = _err(lambda: spark.read.format("dk").load(os.path.join(G, "versions-not-contiguous")).collect())
    assert "DK_CORRUPT_TABLE" in msg


def _native_settles(dbg, before, timeout=20.0):
    """Outstanding native bytes of split reads, once they return to `before` or at the timeout
    (tasks cancelled after a failure may still be closing their readers)."""
    end = time.time() + timeout
    while True:
        now = dbg.nativeBytesOutstanding()
        if now == before or time.time() > end:
            return now
        time.sleep(0.2)


def test_failed_executor_read_frees_native_memory(spark, tmp_path):
    # every file's footer garbled: each split fails while opening its file
    t = str(tmp_path / "t")
    shutil.copytree(PRUNE, t, copy_function=shutil.copy2)
    dbg = spark._jvm.io.dk.spark.DkDebug
    before, allocs = dbg.nativeBytesOutstanding(), dbg.nativeAllocations()
    victims = []
    for root, _, files in os.walk(t):
        victims += [os.path.join(root, f) for f in files if f.endswith(".parquet")
                    and "_delta_log" not in root]
    for f in victims:  # keep the size (the log's `size` still matches), garble the footer
        with open(f, "r+b") as fh:
            fh.seek(-12, 2)
            fh.write(b"\x7f" * 8)
    msg = _err(lambda: spark.read.format("dk").load(t).collect())
    assert "DK_CORRUPT_TABLE" in msg, msg
    assert dbg.nativeAllocations() > allocs  # the failed reads did allocate through the counter
    assert _native_settles(dbg, before) == before


def test_read_failing_mid_stream_frees_native_memory(spark, tmp_path):
    # One file of many row groups (written by delta-spark); the last row group's first page
    # header is overwritten, so the split fails after it has returned batches.
    import pyarrow.parquet as pq
    t = str(tmp_path / "t")
    hconf = spark.sparkContext._jsc.hadoopConfiguration()
    prev = hconf.get("parquet.block.size")
    hconf.set("parquet.block.size", str(64 * 1024))
    try:
        spark.range(0, 60000, 1, 1).selectExpr("id", "cast(id as string) s") \
            .write.format("delta").option("parquet.block.size", 64 * 1024).save(t)
    finally:
        if prev is None:
            hconf.unset("parquet.block.size")
        else:
            hconf.set("parquet.block.size", prev)
    files = [os.path.join(t, f) for f in os.listdir(t) if f.endswith(".parquet")]
    assert len(files) == 1
    md = pq.ParquetFile(files[0]).metadata
    assert md.num_row_groups >= 3, md.num_row_groups
    off = md.row_group(md.num_row_groups - 1).column(0).data_page_offset
    dbg = spark._jvm.io.dk.spark.DkDebug
    # the intact table first: dk and delta agree, and reading it leaves nothing behind
    before = dbg.nativeBytesOutstanding()
    assert_same(spark.read.format("dk").load(t), spark.read.format("delta").load(t), "row groups")
    assert _native_settles(dbg, before) == before
    with open(files[0], "r+b") as fh:
        fh.seek(off)
        fh.write(b"\xff" * 16)
    allocs = dbg.nativeAllocations()
    msg = _err(lambda: spark.read.format("dk").load(t).collect())
    assert "DK_CORRUPT_TABLE" in msg, msg
    assert dbg.nativeAllocations() > allocs
    assert _native_settles(dbg, before) == before


def test_abandoned_read_frees_native_memory(spark, tmp_path):
    # take(1) stops consuming the stream after its first batch; the reader is closed early
    dbg = spark._jvm.io.dk.spark.DkDebug
    before, allocs = dbg.nativeBytesOutstanding(), dbg.nativeAllocations()
    assert len(spark.read.format("dk").load(DV).where(F.col("part").isNotNull()).take(1)) == 1
    assert dbg.nativeAllocations() > allocs
    assert _native_settles(dbg, before) == before
