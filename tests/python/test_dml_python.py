"""Table.update / Table.delete / Table.merge from Python on tables dk writes: the results as
delta-rs (DataFusion, which applies deletion vectors) reads them, against the same change
computed by pyarrow on the rows before; bad input refused with the table unchanged. (The Spark
oracle of the same statements is tests/spark/test_spark_dml.py.)"""
import json
import os

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from test_py_support import import_dk  # noqa: E402
dk = import_dk()

deltalake = pytest.importorskip("deltalake")

N = 2000


def make(tmp_path, dvs=True, name="t"):
    root = str(tmp_path / name)
    ids = list(range(N))
    t = pa.table({"id": pa.array(ids, pa.int64()), "k": pa.array([i % 7 for i in ids], pa.int32()),
                  "s": pa.array([None if i % 11 == 0 else "s%d" % (i % 50) for i in ids]),
                  "d": pa.array([i / 8 - 100 for i in ids], pa.float64())})
    props = {"delta.enableDeletionVectors": "true" if dvs else "false"}
    if dvs:
        props["delta.minReaderVersion"] = "3"
        props["delta.minWriterVersion"] = "7"
    dk.write_table(root, t, properties=props, target_file_size=8 << 10)
    return root


def rs(root, where="true", cols="id, k, s, d"):
    dt = deltalake.DeltaTable(root)
    got = deltalake.QueryBuilder().register("t", dt).execute(
        "SELECT %s FROM t WHERE %s" % (cols, where)).read_all()
    return sorted(pa.table(got).to_pylist(), key=lambda r: r["id"])


def version(root):
    return dk.Table(root).snapshot().version


def has_dv(root):
    log = os.path.join(root, "_delta_log")
    for f in os.listdir(log):
        if f.endswith(".json"):
            for line in open(os.path.join(log, f)):
                a = json.loads(line)
                if "add" in a and a["add"].get("deletionVector"):
                    return True
    return False


@pytest.mark.parametrize("dvs", [True, False], ids=["dv", "cow"])
def test_update_as_pyarrow_computes_it(tmp_path, dvs):
    root = make(tmp_path, dvs)
    before = rs(root)
    m = dk.Table(root).update({"d": "d * 2", "s": "upper(s)"}, predicate="k = 3 AND id < 1500")
    want = [dict(r, d=r["d"] * 2, s=r["s"].upper() if r["s"] else None)
            if r["k"] == 3 and r["id"] < 1500 else r for r in before]
    assert m["num_updated_rows"] == sum(1 for r in before if r["k"] == 3 and r["id"] < 1500)
    assert rs(root) == want
    assert has_dv(root) == dvs
    if not dvs:
        assert m["num_copied_rows"] > 0


@pytest.mark.parametrize("dvs", [True, False], ids=["dv", "cow"])
def test_delete_as_pyarrow_computes_it(tmp_path, dvs):
    root = make(tmp_path, dvs)
    before = rs(root)
    m = dk.Table(root).delete("s IS NULL OR d > 100")
    want = [r for r in before if not (r["s"] is None or r["d"] > 100)]
    assert m["num_deleted_rows"] == len(before) - len(want)
    assert rs(root) == want
    assert has_dv(root) == dvs


def test_update_nothing_matches_commits_nothing(tmp_path):
    root = make(tmp_path)
    v = version(root)
    assert dk.Table(root).update({"k": "0"}, predicate="id < 0")["version"] == -1
    assert version(root) == v


@pytest.mark.parametrize("updates,pred,exc,word", [
    ({"nope": "1"}, None, dk.ColumnNotFound, "nope"),
    ({"k": "k +"}, None, dk.InvalidArgument, ""),
    ({"k": "k * 1000000000"}, "id > 10", dk.InvalidArgument, "k"),   # ANSI overflow, INT column
    ({"k": "s"}, "s IS NOT NULL", dk.InvalidArgument, "k"),          # 's1' is not an INT
    ({"d": "nope + 1"}, None, dk.ColumnNotFound, "nope"),
    ({"k": "1"}, "nope = 1", dk.ColumnNotFound, "nope"),
])
def test_update_bad_input_leaves_the_table(tmp_path, updates, pred, exc, word):
    root = make(tmp_path)
    v, before = version(root), rs(root)
    with pytest.raises(exc, match=word):
        dk.Table(root).update(updates, predicate=pred)
    assert version(root) == v and rs(root) == before


def src(ids, ks):
    return pa.table({"id": pa.array(ids, pa.int64()), "k": pa.array(ks, pa.int32())})


@pytest.mark.parametrize("dvs", [True, False], ids=["dv", "cow"])
def test_merge_upsert_and_deletes_as_pyarrow_computes_it(tmp_path, dvs):
    root = make(tmp_path, dvs)
    before = rs(root)
    ids = list(range(0, 400, 3)) + list(range(5000, 5050))
    s = src(ids, [i % 5 for i in ids])
    m = (dk.Table(root).merge(s, on="t.id = s.id")
         .when_matched_delete(predicate="s.k = 0")
         .when_matched_update({"k": "t.k + s.k", "s": "'m'"})
         .when_not_matched_insert({"id": "s.id", "k": "s.k", "d": "0.5"})
         .when_not_matched_by_source_delete(predicate="t.id >= 1900")
         .execute())
    sk = dict(zip(ids, [i % 5 for i in ids]))
    want = []
    for r in before:
        if r["id"] in sk:
            if sk[r["id"]] == 0:
                continue
            want.append(dict(r, k=r["k"] + sk[r["id"]], s="m"))
        elif r["id"] < 1900:
            want.append(r)
    want += [{"id": i, "k": i % 5, "s": None, "d": 0.5} for i in ids if i >= N]
    assert rs(root) == sorted(want, key=lambda r: r["id"])
    assert m["num_inserted_rows"] == 50 and m["num_source_rows"] == len(ids)
    assert m["num_deleted_rows"] == (len(before) - len(want) + 50) and m["num_updated_rows"] > 0
    assert has_dv(root) == dvs


def test_merge_duplicate_matches_fail_as_spark(tmp_path):
    root = make(tmp_path)
    v, before = version(root), rs(root)
    dup = src([5, 5, 6], [1, 2, 3])
    with pytest.raises(dk.InvalidArgument, match="MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW"):
        dk.Table(root).merge(dup, on="t.id = s.id").when_matched_update({"k": "s.k"}).execute()
    assert version(root) == v and rs(root) == before
    # an unconditional DELETE is the one MATCHED clause duplicates may meet (Spark's rule)
    m = dk.Table(root).merge(dup, on="t.id = s.id").when_matched_delete().execute()
    assert m["num_deleted_rows"] == 2
    assert [r["id"] for r in rs(root)] == [i for i in range(N) if i not in (5, 6)]


@pytest.mark.parametrize("on,exc", [("t.id < s.id", dk.UnsupportedFeature),
                                    ("t.nope = s.id", dk.ColumnNotFound),
                                    ("t.id = s.nope", dk.ColumnNotFound)])
def test_merge_bad_condition_leaves_the_table(tmp_path, on, exc):
    root = make(tmp_path)
    v = version(root)
    with pytest.raises(exc):
        dk.Table(root).merge(src([1], [1]), on=on).when_matched_delete().execute()
    assert version(root) == v


def test_merge_copy_on_write_rewrites_only_touched_files(tmp_path):
    """Without DVs a file with a matched row is rewritten (its other rows copied); the others
    stay; numTargetRowsCopied counts the copies."""
    root = make(tmp_path, dvs=False)
    before, files0 = rs(root), set(deltalake.DeltaTable(root).file_uris())
    m = dk.Table(root).merge(src([3], [9]), on="t.id = s.id").when_matched_update(
        {"k": "s.k"}).execute()
    assert rs(root) == [dict(r, k=9) if r["id"] == 3 else r for r in before]
    files1 = set(deltalake.DeltaTable(root).file_uris())
    assert len(files0 - files1) == 1 and len(files1 - files0) == 1
    ci = json.loads(open(os.path.join(root, "_delta_log", "%020d.json" % version(root))).readline())
    om = ci["commitInfo"]["operationMetrics"]
    assert om["numTargetFilesRemoved"] == "1" and om["numTargetRowsUpdated"] == "1"
    assert int(om["numTargetRowsCopied"]) > 0 and m["num_updated_rows"] == 1


def cdf_rows(root, start):
    got = pa.table(deltalake.DeltaTable(root).load_cdf(starting_version=start).read_all())
    return sorted((r["id"], r["v"], r["p"], r["_change_type"], r["_commit_version"])
                  for r in got.to_pylist())


def test_change_data_of_update_delete_merge_as_delta_rs_reads_it(tmp_path):
    """UPDATE and MERGE write update_pre/postimage, delete and insert change data; a DV DELETE
    writes none (readers take its rows from the DVs): delta-rs's load_cdf over dk's commits."""
    root = str(tmp_path / "cdf")
    t = pa.table({"id": pa.array(range(100), pa.int64()), "v": pa.array([i * 1.5 for i in range(100)]),
                  "p": pa.array(["a" if i % 2 else "b" for i in range(100)])})
    dk.write_table(root, t, partition_by=["p"], properties={
        "delta.enableDeletionVectors": "true", "delta.enableChangeDataFeed": "true",
        "delta.minReaderVersion": "3", "delta.minWriterVersion": "7"})
    assert dk.Table(root).update({"v": "v * 10"}, predicate="id < 3")["num_added_change_files"] > 0
    assert dk.Table(root).delete("id >= 98")["num_added_change_files"] == 0
    src = pa.table({"id": pa.array([1, 2, 50, 200], pa.int64()), "v": pa.array([-1.0, -2.0, -3.0, -4.0]),
                    "p": pa.array(["a", "b", "b", "c"])})
    (dk.Table(root).merge(src, on="t.id = s.id").when_matched_update({"v": "s.v"}, predicate="s.v < -1.5")
     .when_matched_delete().when_not_matched_insert_all().execute())
    pa_ = lambda i: "a" if i % 2 else "b"  # noqa: E731
    want = []
    for i in range(3):
        want += [(i, i * 1.5, pa_(i), "update_preimage", 1), (i, i * 15.0, pa_(i), "update_postimage", 1)]
    want += [(i, i * 1.5, pa_(i), "delete", 2) for i in (98, 99)]
    want += [(1, 15.0, "a", "delete", 3), (2, 30.0, "b", "update_preimage", 3),
             (2, -2.0, "b", "update_postimage", 3), (50, 75.0, "b", "update_preimage", 3),
             (50, -3.0, "b", "update_postimage", 3), (200, -4.0, "c", "insert", 3)]
    assert cdf_rows(root, 1) == sorted(want)
    log = os.path.join(root, "_delta_log", "%020d.json" % 1)
    cdcs = [json.loads(x)["cdc"] for x in open(log) if '"cdc"' in x]
    assert cdcs and all(c["path"].startswith("_change_data/") and not c["dataChange"] for c in cdcs)


def dk_sql(sql):
    import subprocess
    import dkharness as h
    return subprocess.run([str(h.dk_binary()), "sql", sql], capture_output=True, text=True)


def test_sqlite_delete_update_rollback_as_delta_rs_reads_them(tmp_path):
    """DELETE / UPDATE on a `delta` virtual table (xUpdate: rowid = file ordinal and row index,
    straight into DV bits), one commit at the SQLite transaction's end; ROLLBACK leaves the
    table as it was."""
    root = make(tmp_path)
    before = rs(root)
    q = "'" + root + "'"
    r = dk_sql("CREATE VIRTUAL TABLE t USING delta(%s); DELETE FROM t WHERE k = 2 OR id < 10; "
               "UPDATE t SET d = d + 1000, s = 'u' WHERE id BETWEEN 500 AND 520;" % q)
    assert r.returncode == 0, r.stderr
    want = [dict(r_, d=r_["d"] + 1000, s="u") if 500 <= r_["id"] <= 520 else r_
            for r_ in before if not (r_["k"] == 2 or r_["id"] < 10)]
    assert rs(root) == want and has_dv(root)
    v = version(root)
    r = dk_sql("CREATE VIRTUAL TABLE t USING delta(%s); BEGIN; DELETE FROM t WHERE id < 1000; "
               "ROLLBACK;" % q)
    assert r.returncode == 0, r.stderr
    assert version(root) == v and rs(root) == want


@pytest.mark.parametrize("prop,word", [("delta.enableRowTracking", "row tracking"),
                                       ("delta.enableChangeDataFeed", "change data feed")])
def test_sqlite_update_refuses_row_tracking_and_cdf_tables(tmp_path, prop, word):
    """SQLite's UPDATE (DV bits + new rows through xUpdate) neither keeps row ids nor writes
    update_pre/postimage rows: on such tables it fails naming the feature, the table unchanged,
    while DELETE (DVs only, no change data, as delta-spark's DV DELETE) still works."""
    root = str(tmp_path / "t")
    t = pa.table({"id": pa.array(range(100), pa.int64()), "k": pa.array([1] * 100, pa.int32())})
    dk.write_table(root, t, properties={"delta.enableDeletionVectors": "true", prop: "true",
                                        "delta.minReaderVersion": "3",
                                        "delta.minWriterVersion": "7"})
    v = version(root)
    q = "'" + root + "'"
    r = dk_sql("CREATE VIRTUAL TABLE t USING delta(%s); UPDATE t SET k = 2 WHERE id < 5;" % q)
    assert r.returncode != 0 and word in r.stderr and "dk update" in r.stderr, r.stderr
    assert version(root) == v
    r = dk_sql("CREATE VIRTUAL TABLE t USING delta(%s); DELETE FROM t WHERE id < 5;" % q)
    assert r.returncode == 0, r.stderr
    assert version(root) == v + 1 and [r["id"] for r in rs(root, cols="id")] == list(range(5, 100))


@pytest.mark.parametrize("dvs", [True, False], ids=["dv", "cow"])
def test_merge_reads_only_the_files_in_the_source_key_range(tmp_path, dvs):
    """The target files read are pruned by the source keys' min/max (a skipping predicate on
    t.id): the others are neither read nor rewritten. NOT MATCHED BY SOURCE reads them all."""
    root = make(tmp_path, dvs)
    before = rs(root)
    n_files = len(deltalake.DeltaTable(root).file_uris())
    # files holding ids 40..60 as their stats say
    adds = pa.table(deltalake.DeltaTable(root).get_add_actions(flatten=True)).to_pylist()
    want_files = sum(1 for a in adds if a["min.id"] <= 60 and a["max.id"] >= 40)
    assert n_files > 4 * want_files
    ins = {"id": "s.id", "k": "s.k"}
    m = (dk.Table(root).merge(src([40, 60, None], [1, 2, 3]), on="t.id = s.id")
         .when_matched_update({"k": "s.k"}).when_not_matched_insert(ins).execute())
    assert m["num_files_before_skipping"] == n_files
    assert m["num_files_after_skipping"] == want_files
    sk = {40: 1, 60: 2}
    want = [dict(r, k=sk[r["id"]]) if r["id"] in sk else r for r in before]
    assert rs(root, "id IS NOT NULL") == want and m["num_inserted_rows"] == 1
    m = (dk.Table(root).merge(src([41], [1]), on="t.id = s.id")
         .when_not_matched_by_source_delete(predicate="t.id > 1990").execute())
    assert m["num_files_after_skipping"] == m["num_files_before_skipping"]
    # a source with no key at all reads nothing
    m = (dk.Table(root).merge(src([None], [1]), on="t.id = s.id")
         .when_matched_delete().when_not_matched_insert(ins).execute())
    assert m["num_files_after_skipping"] == 0 and m["num_inserted_rows"] == 1
