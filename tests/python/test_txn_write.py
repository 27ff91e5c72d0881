"""dk.write_table in every mode, with delta-rs (and dk) reading every version, and bad input
refused with the table unchanged."""
import json
import os

import pyarrow as pa
import pytest

from test_py_support import import_dk  # noqa: E402
dk = import_dk()

deltalake = pytest.importorskip("deltalake")


def rs(root, version=None, cols=("x", "p")):
    t = deltalake.DeltaTable(root, version=version).to_pyarrow_table()
    return sorted(tuple(r.get(c) for c in cols) for r in t.to_pylist())


def mine(root, version=None, cols=("x", "p")):
    t = pa.table(dk.Table(root).snapshot(version=version).scan())
    return sorted(tuple(r.get(c) for c in cols) for r in t.to_pylist())


def data(xs, ps):
    return pa.table({"x": pa.array(xs, pa.int64()), "p": pa.array(ps, pa.string())})


def version(root):
    return dk.Table(root).snapshot().version


def test_modes(tmp_path):
    root = str(tmp_path / "t")
    dk.write_table(root, data([1, 2, 3, 4], ["a", "b", None, "needs:esc%"]), partition_by=["p"])
    dk.write_table(root, data([5], ["a"]), mode="append")
    dk.write_table(root, data([6], ["a"]), mode="overwrite", predicate="p = 'a'")
    dk.write_table(root, data([7, 8], ["b", "c"]), mode="overwrite", partition_overwrite="dynamic")
    assert dk.write_table(root, data([0], ["z"]), mode="ignore")["version"] == -1
    for v in range(version(root) + 1):
        assert mine(root, v) == rs(root, v), v
    assert mine(root) == [(3, None), (4, "needs:esc%"), (6, "a"), (7, "b"), (8, "c")]
    dirs = sorted(d for d in os.listdir(root) if d.startswith("p="))
    assert "p=__HIVE_DEFAULT_PARTITION__" in dirs and "p=needs%3Aesc%25" in dirs
    hist = deltalake.DeltaTable(root).history()
    params = [h["operationParameters"] for h in reversed(hist)]
    assert [p["mode"] for p in params] == ["ErrorIfExists", "Append", "Overwrite", "Overwrite"]
    assert params[2]["predicate"] == json.dumps(["p = 'a'"])
    assert params[3]["isDynamicPartitionOverwrite"] == "true"
    # full overwrite
    dk.write_table(root, data([9], ["a"]), mode="overwrite")
    assert mine(root) == rs(root) == [(9, "a")]
    # stats on every file, as delta-rs parses them
    adds = pa.table(deltalake.DeltaTable(root).get_add_actions(flatten=True)).to_pylist()
    assert adds[0]["num_records"] == 1 and adds[0]["min.x"] == 9


def test_schema_evolution_and_idempotent_writes(tmp_path):
    root = str(tmp_path / "t")
    dk.write_table(root, data([1], ["a"]), partition_by=["p"])
    more = pa.table({"x": pa.array([2], pa.int64()), "p": ["b"], "y": pa.array([1.5])})
    with pytest.raises(dk.InvalidArgument, match="not in the table's schema"):
        dk.write_table(root, more, mode="append")
    dk.write_table(root, more, mode="append", schema_mode="merge")
    assert [f.name for f in pa.schema(dk.Table(root).snapshot().schema)] == ["x", "p", "y"]
    assert rs(root, cols=("x", "y")) == mine(root, cols=("x", "y")) == [(1, None), (2, 1.5)]
    new = pa.table({"k": pa.array(["only"])})
    dk.write_table(root, new, mode="overwrite", schema_mode="overwrite")
    assert deltalake.DeltaTable(root).to_pyarrow_table().to_pylist() == [{"k": "only"}]
    assert dk.Table(root).snapshot().partition_columns == []
    # idempotent app transactions
    v = version(root)
    assert dk.write_table(root, new, mode="append", app_id="job", app_version=1)["version"] == v + 1
    assert dk.write_table(root, new, mode="append", app_id="job", app_version=1)["version"] == -1
    assert version(root) == v + 1


def test_bad_input_leaves_the_table_unchanged(tmp_path):
    root = str(tmp_path / "t")
    dk.Table.create(root, "x long not null, p string", partition_by=["p"],
                    properties={"delta.constraints.positive": "x > 0"})
    before = sorted(os.listdir(os.path.join(root, "_delta_log")))
    files_before = sorted(os.listdir(root))
    with pytest.raises(dk.InvalidArgument, match="positive"):
        dk.write_table(root, data([1, -1], ["a", "a"]), mode="append")
    with pytest.raises(dk.InvalidArgument):  # a NULL in the NOT NULL column
        dk.write_table(root, pa.table({"x": pa.array([None], pa.int64()), "p": ["a"]}),
                       mode="append")
    with pytest.raises(dk.InvalidArgument, match="partition column 'p' is missing"):
        dk.write_table(root, pa.table({"x": pa.array([1], pa.int64())}), mode="append")
    with pytest.raises(dk.InvalidArgument, match="DELTA_REPLACE_WHERE_MISMATCH"):
        dk.write_table(root, data([1], ["b"]), mode="overwrite", predicate="p = 'a'")
    with pytest.raises(dk.InvalidArgument, match="DELTA_PATH_EXISTS"):
        dk.write_table(root, data([1], ["a"]))
    assert sorted(os.listdir(os.path.join(root, "_delta_log"))) == before
    assert sorted(os.listdir(root)) == files_before  # no data file left behind
    assert version(root) == 0
    # an unknown writer feature: refused before anything is written
    r2 = str(tmp_path / "f")
    os.makedirs(os.path.join(r2, "_delta_log"))
    with open(os.path.join(r2, "_delta_log", "%020d.json" % 0), "w") as f:
        f.write(json.dumps({"protocol": {"minReaderVersion": 1, "minWriterVersion": 7,
                                         "writerFeatures": ["someFutureFeature"]}}) + "\n")
        f.write(json.dumps({"metaData": {"id": "1", "format": {"provider": "parquet",
                                                               "options": {}},
                                         "schemaString": json.dumps(
                                             {"type": "struct", "fields": [
                                                 {"name": "x", "type": "long", "nullable": True,
                                                  "metadata": {}}]}),
                                         "partitionColumns": [], "configuration": {},
                                         "createdTime": 1}}) + "\n")
    with pytest.raises(dk.UnsupportedFeature, match="someFutureFeature"):
        dk.write_table(r2, pa.table({"x": pa.array([1], pa.int64())}), mode="append")
    assert sorted(os.listdir(r2)) == ["_delta_log"]


def test_target_file_size_rolls_files(tmp_path):
    root = str(tmp_path / "t")
    n = 200_000
    dk.write_table(root, data(list(range(n)), ["a"] * n), partition_by=["p"],
                   target_file_size=256 * 1024)
    s = dk.Table(root).snapshot()
    assert s.num_files > 1
    assert len(rs(root)) == n


def test_partitioned_write_types_rolling_and_batches(tmp_path):
    """Many partitions over several partition types (nulls, "" and values needing escaping),
    several batches, and files rolling within one batch: delta-rs reads every row back, and
    each file's partition values are the values of its rows."""
    import datetime
    import decimal
    import random
    rnd = random.Random(7)
    n = 20_000
    strs = ["a", "b/c", "needs:esc%", "", None, "ü=1", "x y"]
    rows = {
        "x": list(range(n)),
        "s": [rnd.choice(strs) for _ in range(n)],
        "i": [rnd.choice([1, -5, None, 2**40]) for _ in range(n)],
        "d": [rnd.choice([datetime.date(2020, 1, 2), None, datetime.date(1969, 12, 31)])
              for _ in range(n)],
        "b": [rnd.choice([True, False, None]) for _ in range(n)],
        "m": [rnd.choice([decimal.Decimal("1.50"), decimal.Decimal("0.05"), None])  # delta-rs misreads negative ones
              for _ in range(n)],
        "v": ["v%d" % (k % 97) * 3 for k in range(n)],
    }
    types = {"x": pa.int64(), "s": pa.string(), "i": pa.int64(), "d": pa.date32(),
             "b": pa.bool_(), "m": pa.decimal128(5, 2), "v": pa.string()}
    t = pa.table({k: pa.array(v, types[k]) for k, v in rows.items()})
    root = str(tmp_path / "t")
    parts = ["s", "i", "d", "b", "m"]
    dk.write_table(root, pa.Table.from_batches(t.to_batches(max_chunksize=7_000)),
                   partition_by=parts, target_file_size=2048)
    got = deltalake.DeltaTable(root).to_pyarrow_table().to_pylist()
    norm = [dict(r, s=r["s"] if r["s"] != "" else None) for r in t.to_pylist()]
    key = lambda r: r["x"]  # noqa: E731
    assert sorted(got, key=key) == sorted(norm, key=key)
    # every file holds rows of its own partition only, and files rolled
    dt = deltalake.DeltaTable(root)
    adds = pa.table(dt.get_add_actions(flatten=True)).to_pylist()
    assert len(adds) > len({tuple(a["partition." + p] for p in parts) for a in adds})
    for a in adds:
        import pyarrow.parquet as pq
        from urllib.parse import unquote
        f = pq.read_table(os.path.join(root, unquote(a["path"])))
        assert f.num_rows == a["num_records"]
        xs = f.column("x").to_pylist()
        want = {tuple(norm[x][p] for p in parts) for x in xs}
        assert want == {tuple(a["partition." + p] for p in parts)}
