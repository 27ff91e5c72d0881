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
    # Spark's VACUUM finds nothing left to delete: dk removed the partition directories it
    # emptied (p=b, p=c) and the Hadoop checksums of Spark's files, as VacuumCommand does
    assert spark.sql("VACUUM delta.`%s` RETAIN 0 HOURS DRY RUN" % root).collect() == []
    assert not os.path.exists(os.path.join(root, "p=b"))


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


def test_dk_optimize_in_spark(spark, tmp_path):
    """dk's OPTIMIZE on a table Spark wrote (column mapping, a deletion vector): Spark reads the
    same rows at every version and shows OPTIMIZE in its history with delta-spark's metrics."""
    root = str(tmp_path / "opt")
    spark.sql("CREATE TABLE delta.`%s` (x long, p string) USING delta PARTITIONED BY (p) "
              "TBLPROPERTIES ('delta.columnMapping.mode' = 'name', "
              "'delta.enableDeletionVectors' = 'true')" % root)
    for i in range(3):
        spark.createDataFrame([(10 * i + k, "a" if k % 2 else "b") for k in range(4)],
                              "x long, p string").coalesce(1).write.format("delta") \
            .mode("append").save(root)
    spark.sql("DELETE FROM delta.`%s` WHERE x = 1" % root)
    before = dk.Table(root).snapshot().version
    rows = spark_rows(spark, root)
    assert rows == dk_rows(root)
    r = dk.Table(root).optimize()
    assert r["version"] == before + 1 and r["partitions_optimized"] == 2
    assert r["files_removed"] == 6 and r["files_added"] == 2
    for v in range(r["version"] + 1):
        assert spark_rows(spark, root, v) == dk_rows(root, v), "version %d" % v
    assert spark_rows(spark, root) == rows
    h = spark.sql("DESCRIBE HISTORY delta.`%s` LIMIT 1" % root).collect()[0]
    assert h["operation"] == "OPTIMIZE"
    assert h["operationMetrics"]["numRemovedFiles"] == "6"
    assert h["operationMetrics"]["numDeletionVectorsRemoved"] == "1"
    assert h["operationParameters"]["predicate"] == "[]"
    detail = spark.sql("DESCRIBE DETAIL delta.`%s`" % root).collect()[0]
    assert detail["numFiles"] == dk.Table(root).snapshot().num_files == 2
    # Spark writes after dk's OPTIMIZE; both read the same
    spark.createDataFrame([(99, "a")], "x long, p string").write.format("delta") \
        .mode("append").save(root)
    assert spark_rows(spark, root) == dk_rows(root)


def test_dk_column_mapped_table_in_spark(spark, tmp_path):
    """A table dk creates with delta.columnMapping.mode=name (ids and physical names assigned
    as delta-spark assigns them, nested fields too) and evolves with mergeSchema: Spark reads
    dk's rows, appends, and dk reads Spark's."""
    root = str(tmp_path / "cm")
    st = pa.struct([("u", pa.int64())])
    dk.write_table(root, pa.table({"x": pa.array([1, 2], pa.int64()), "p": ["a", "b"],
                                   "s": pa.array([{"u": 1}, {"u": 2}], st)}),
                   partition_by=["p"], properties={"delta.columnMapping.mode": "name"})
    dk.write_table(root, pa.table({"x": pa.array([3], pa.int64()), "p": ["a"],
                                   "s": pa.array([{"u": 3}], st), "y": ["new"]}),
                   mode="append", schema_mode="merge")
    meta = dk.Table(root).snapshot().metadata
    assert meta["configuration"]["delta.columnMapping.maxColumnId"] == "5"
    cols = ("x", "p", "y")
    got = sorted(tuple(r[c] for c in cols) + (r["s"]["u"],) for r in
                 spark.read.format("delta").load(root).collect())
    assert got == [(1, "a", None, 1), (2, "b", None, 2), (3, "a", "new", 3)]
    assert spark_rows(spark, root, cols=cols) == dk_rows(root, cols=cols)
    spark.sql("INSERT INTO delta.`%s` (x, p, s, y) VALUES (4, 'c', named_struct('u', 4), 'z')"
              % root)
    assert spark_rows(spark, root, cols=cols) == dk_rows(root, cols=cols)
    assert (4, "c", "z") in dk_rows(root, cols=cols)
