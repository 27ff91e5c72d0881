"""Tables written by dk's transactions, read and written on by Spark + delta-spark (the oracle):
CREATE, appends, replaceWhere, dynamic partition overwrite, overwrite, RESTORE and VACUUM by
dk; Spark reads every version (versionAsOf) with the same rows as dk, DESCRIBE HISTORY shows
dk's operations, DESCRIBE DETAIL its protocol; then Spark appends, DELETEs (with deletion
vectors where enabled) and OPTIMIZEs on dk's table, and dk reads the result as Spark does.

Data files are written by pyarrow and committed through dk.Transaction (dk's Parquet writer
path has its own tests)."""
import json
import os

import pyarrow as pa
import pyarrow.compute  # noqa: F401
import pyarrow.parquet as pq
import pytest

import dk


def hive_escape(v):
    esc = set('"#%\'*/:=?\\\x7f{[]^') | {chr(c) for c in range(1, 32)}
    return "".join("%%%02X" % ord(c) if c in esc else c for c in v)


_n = [0]


def write(t, root, rows, part=None, mode="Append", predicate=None, dynamic=False):
    params = {"mode": mode, "partitionBy": '["p"]' if part is not None else "[]"}
    if predicate:
        params["predicate"] = json.dumps([predicate])
    if dynamic:
        params["isDynamicPartitionOverwrite"] = "true"
    x = t.transaction(operation="WRITE", operation_parameters=params)
    if mode == "Overwrite":
        idx = x.read_partitions([[part]]) if dynamic else x.read_files(predicate)
        for i in idx:
            x.remove_file(i)
    data = pa.table({"x": pa.array(rows, pa.int64())})
    _n[0] += 1
    rel = ("p=%s/" % hive_escape(part) if part is not None else "") + \
        "part-%05d-dk.c000.snappy.parquet" % _n[0]
    full = os.path.join(root, rel)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    pq.write_table(data, full)
    st = {"numRecords": len(rows), "minValues": {"x": min(rows)}, "maxValues": {"x": max(rows)},
          "nullCount": {"x": 0}}
    x.add_file(rel, {"p": part} if part is not None else None, size=os.path.getsize(full),
               modification_time=1, stats=json.dumps(st))
    x.set_metric("numFiles", 1)
    x.set_metric("numOutputRows", len(rows))
    return x.commit()["version"]


def dk_rows(root, v=None, cols=("x", "p")):
    t = pa.table(dk.Table(root).snapshot(version=v).scan())
    return sorted(tuple(r[c] for c in cols) for r in t.to_pylist())


def spark_rows(spark, root, v=None, cols=("x", "p")):
    r = spark.read.format("delta")
    if v is not None:
        r = r.option("versionAsOf", v)
    return sorted(tuple(row[c] for c in cols) for row in r.load(root).collect())


@pytest.mark.xfail(strict=False, reason="open (issue #14): Spark VACUUM DRY RUN lists 2 files after dk's VACUUM")
def test_dk_partitioned_table_in_spark(spark, tmp_path):
    root = str(tmp_path / "t")
    t = dk.Table.create(root, "x long, p string", partition_by=["p"])
    write(t, root, [1, 2], "a")
    write(t, root, [3], "b")
    write(t, root, [4], "needs a:b/c%")
    write(t, root, [5, 6], "a", mode="Overwrite", predicate="p = 'a'")
    write(t, root, [7], "b", mode="Overwrite", dynamic=True)
    write(t, root, [8], "c")
    t.restore(3)
    latest = dk.Table(root).snapshot().version
    for v in range(latest + 1):
        assert spark_rows(spark, root, v) == dk_rows(root, v), "version %d" % v
    hist = spark.sql("DESCRIBE HISTORY delta.`%s`" % root).orderBy("version").collect()
    assert [h["operation"] for h in hist] == [x["operation"] for x in
                                              reversed(dk.Table(root).history())]
    assert hist[-1]["operation"] == "RESTORE"
    assert hist[1]["isBlindAppend"] is True and hist[4]["isBlindAppend"] is False
    detail = spark.sql("DESCRIBE DETAIL delta.`%s`" % root).collect()[0]
    assert detail["numFiles"] == dk.Table(root).snapshot().num_files
    assert detail["partitionColumns"] == ["p"]
    # Spark's file paths equal dk's (the escaped directory)
    files = {f for f in
             spark.read.format("delta").load(root).inputFiles()}
    assert {"file:" + os.path.join(root, f["path"]) for f in
            dk.Table(root).snapshot().files()} == files
    # Spark writes on dk's table: append, DELETE, OPTIMIZE; dk reads what Spark reads
    spark.createDataFrame([(9, "a")], "x long, p string").write.format("delta") \
        .mode("append").save(root)
    spark.sql("DELETE FROM delta.`%s` WHERE x = 3" % root)
    spark.sql("OPTIMIZE delta.`%s`" % root)
    for v in range(latest, dk.Table(root).snapshot().version + 1):
        assert spark_rows(spark, root, v) == dk_rows(root, v), "version %d" % v
    # dk appends after Spark's commits, Spark reads it
    write(dk.Table(root), root, [10], "d")
    assert spark_rows(spark, root) == dk_rows(root)
    # VACUUM: dk deletes only what no live version needs; Spark still reads the table
    dk.Table(root).vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False)
    assert spark_rows(spark, root) == dk_rows(root)
    # Not yet asserted: Spark's VACUUM ... DRY RUN after dk's VACUUM still lists 2 files here
    # (under investigation; issue #14 note).


@pytest.mark.xfail(strict=False, reason="open (issue #14): _metadata.row_id of a dk-written row-tracking table in Spark")
def test_dk_table_with_features_in_spark(spark, tmp_path):
    root = str(tmp_path / "dv")
    t = dk.Table.create(root, "x long", properties={"delta.enableDeletionVectors": "true",
                                                    "delta.enableRowTracking": "true"})
    write(t, root, [1, 2, 3])
    write(t, root, [4, 5])
    detail = spark.sql("DESCRIBE DETAIL delta.`%s`" % root).collect()[0]
    assert "deletionVectors" in detail["tableFeatures"] and "rowTracking" in detail["tableFeatures"]
    assert spark_rows(spark, root, cols=("x",)) == dk_rows(root, cols=("x",))
    ids = spark.read.format("delta").load(root).select("x", "_metadata.row_id").collect()
    assert sorted(r["row_id"] for r in ids) == [0, 1, 2, 3, 4]
    # Spark's DELETE writes a DV into dk's table; dk applies it
    spark.sql("DELETE FROM delta.`%s` WHERE x = 2" % root)
    assert dk_rows(root, cols=("x",)) == [(1,), (3,), (4,), (5,)]
    write(dk.Table(root), root, [6])
    assert spark_rows(spark, root, cols=("x",)) == dk_rows(root, cols=("x",))
    ids = spark.read.format("delta").load(root).select("x", "_metadata.row_id").collect()
    assert sorted(r["row_id"] for r in ids) == [0, 2, 3, 4, 5]


def test_spark_table_written_by_dk(spark, tmp_path):
    root = str(tmp_path / "s")
    spark.createDataFrame([(1, "a")], "x long, p string").write.format("delta") \
        .partitionBy("p").save(root)
    write(dk.Table(root), root, [2], "b")
    write(dk.Table(root), root, [3], "a", mode="Overwrite", predicate="p = 'a'")
    assert spark_rows(spark, root) == dk_rows(root) == [(2, "b"), (3, "a")]
    spark.createDataFrame([(4, "c")], "x long, p string").write.format("delta") \
        .mode("append").save(root)
    assert dk_rows(root) == spark_rows(spark, root)
