"""Every table of the interop harness (tests/interop, written by delta-spark and delta-rs; built
into $DK_INTEROP_DIR or build/interop by tests/interop/gen_tables.py) read through
format("dk") and format("delta") side by side: every version, the harness's filter queries,
aggregates, `_metadata` (row tracking fields included), and timestamp time travel at every
commit time."""
import datetime
import os

import pytest
from pyspark.sql import functions as F

from conftest import interop_dir
from sparkcmp import assert_same, diff, dk_files, rows, rows_and_files


def tables():
    try:
        import gen_tables
    except Exception:  # pyspark missing: the spark fixture skips anyway
        return []
    d = interop_dir()
    return [t for t in gen_tables.TABLES if os.path.exists(os.path.join(d, t["name"], "DONE"))]


def root(t):
    return os.path.join(interop_dir(), t["name"], "delta")


def history(spark, path):
    h = spark.sql("DESCRIBE HISTORY delta.`%s`" % path).select("version", "timestamp").collect()
    return sorted((r[0], r[1]) for r in h)


@pytest.mark.parametrize("t", tables(), ids=lambda t: t["name"])
def test_interop_table(spark, t):
    p = root(t)
    hist = history(spark, p)
    vs = [v for v, _ in hist]
    for v in sorted({vs[0], vs[len(vs) // 2], vs[-2] if len(vs) > 1 else vs[0]}):
        dk = spark.read.format("dk").option("versionAsOf", v).load(p)
        de = spark.read.format("delta").option("versionAsOf", v).load(p)
        assert_same(dk, de, f"{t['name']}@v{v}")
    dk = spark.read.format("dk").load(p)
    de = spark.read.format("delta").load(p)
    assert {f.name: f.dataType.simpleString() for f in dk.schema.fields} == \
        {f.name: f.dataType.simpleString() for f in de.schema.fields}
    for name, cond in t.get("filters", []):
        dkq, deq = dk.where(cond), de.where(cond)
        de_rows, de_files = rows_and_files(deq)
        cols = [f"`{c}`" for c in de.columns]  # dk orders partition columns last
        dkq = dkq.select(*cols)
        diff(rows(dkq), de_rows, f"{t['name']} filter {name}: {cond}")
        sel, _ = dk_files(dkq)  # the plan of the query just run
        assert sel <= de_files, f"{name}: dk plans {sel} files, delta-spark {de_files}"
    first = de.columns[0]
    agg = [F.count(F.lit(1)).alias("n"), F.countDistinct(f"`{first}`").alias("d")]
    assert_same(dk.agg(*agg), de.agg(*agg), "aggregate")
    meta = ["file_name", "file_size", "file_modification_time"]
    if t.get("row_tracking"):
        meta += ["row_id", "row_commit_version"]
    cols = de.columns + [F.col("_metadata." + m).alias("m_" + m) for m in meta]
    assert_same(dk.select(*cols), de.select(*cols), "_metadata")


@pytest.mark.parametrize("t", [t for t in tables() if t.get("time_travel")],
                         ids=lambda t: t["name"])
def test_interop_timestamp_travel(spark, t):
    p = root(t)
    for v, ts in history(spark, p):
        for delta_s in (0, 0.5):
            at = (ts + datetime.timedelta(seconds=delta_s)).strftime("%Y-%m-%d %H:%M:%S.%f")
            try:
                de = spark.read.format("delta").option("timestampAsOf", at).load(p)
                de_rows = rows(de)
            except Exception as e:  # after the latest commit: both refuse
                assert "TIMESTAMP" in str(e).upper()
                with pytest.raises(Exception, match="DK_TIMESTAMP_OUT_OF_RANGE"):
                    spark.read.format("dk").option("timestampAsOf", at).load(p).count()
                continue
            dk = spark.read.format("dk").option("timestampAsOf", at).load(p)
            diff(rows(dk.select(*[f"`{c}`" for c in de.columns])), de_rows,
                 f"{t['name']} timestampAsOf {at} (v{v})")
