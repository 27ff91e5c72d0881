"""Generated columns written by dk, with delta-spark as the oracle: delta-spark creates a table
with GENERATED ALWAYS AS columns, dk appends rows that leave them out (dk computes them) and
rows that give them (dk checks them, as delta-spark's constraint does); delta-spark reads the
table and finds every generated value equal to the expression it evaluates itself, and it can
append after dk. An expression dk cannot evaluate refuses the write with the table unchanged."""
import datetime
import os

import pyarrow as pa
import pytest

import dk


def test_generated_columns_computed_and_checked(spark, tmp_path):
    root = str(tmp_path / "gen")
    spark.sql("CREATE TABLE delta.`%s` (x BIGINT, s STRING, "
              "y BIGINT GENERATED ALWAYS AS (x * 2 + 1), "
              "z STRING GENERATED ALWAYS AS (concat(s, '-', cast(x AS STRING))), "
              "w INT GENERATED ALWAYS AS (CAST(x %% 7 AS INT))) USING delta" % root)
    spark.sql("INSERT INTO delta.`%s` (x, s) VALUES (1, 'a'), (NULL, 'b')" % root)
    dk.write_table(root, pa.table({"x": pa.array([5, -3, None, 2**40], pa.int64()),
                                   "s": pa.array(["c", None, "e", "f"])}), mode="append")
    # given, and equal to the expression: accepted
    dk.write_table(root, pa.table({"x": pa.array([10], pa.int64()), "s": pa.array(["g"]),
                                   "y": pa.array([21], pa.int64()), "z": pa.array(["g-10"]),
                                   "w": pa.array([3], pa.int32())}), mode="append")
    v = dk.Table(root).snapshot().version
    # given and different: refused, as delta-spark refuses it
    with pytest.raises(dk.InvalidArgument, match="Generated Column"):
        dk.write_table(root, pa.table({"x": pa.array([10], pa.int64()), "s": pa.array(["g"]),
                                       "y": pa.array([22], pa.int64()), "z": pa.array(["g-10"]),
                                       "w": pa.array([3], pa.int32())}), mode="append")
    with pytest.raises(Exception, match="(?i)constraint|generat"):
        spark.sql("INSERT INTO delta.`%s` VALUES (10, 'g', 22, 'g-10', 3)" % root)
    assert dk.Table(root).snapshot().version == v
    spark.sql("INSERT INTO delta.`%s` (x, s) VALUES (7, 'h')" % root)  # Spark after dk
    df = spark.read.format("delta").load(root)
    bad = df.where("NOT (y <=> (x * 2 + 1)) OR NOT (z <=> concat(s, '-', cast(x AS STRING))) "
                   "OR NOT (w <=> CAST(x % 7 AS INT))").count()
    assert bad == 0
    key = repr  # rows hold NULLs
    got = sorted((tuple(r) for r in df.select("x", "y", "z", "w").collect()), key=key)
    assert len(got) == 8
    mine = pa.table(dk.Table(root).snapshot().scan()).select(["x", "y", "z", "w"]).to_pylist()
    assert sorted((tuple(r.values()) for r in mine), key=key) == got


def test_generated_column_dk_cannot_evaluate_is_refused(spark, tmp_path):
    root = str(tmp_path / "gen2")
    spark.sql("CREATE TABLE delta.`%s` (d DATE, m INT GENERATED ALWAYS AS (month(d))) "
              "USING delta" % root)
    v = dk.Table(root).snapshot().version
    with pytest.raises(dk.UnsupportedFeature, match="month"):
        dk.write_table(root, pa.table({"d": pa.array([datetime.date(2020, 3, 4)])}),
                       mode="append")
    assert dk.Table(root).snapshot().version == v
    assert not [f for f in os.listdir(root) if f.endswith(".parquet")]
