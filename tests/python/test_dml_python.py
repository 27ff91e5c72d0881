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


def rt_rows(root):
    """id -> (row_id, row_commit_version) as dk's scan gives _metadata."""
    t = pa.table(dk.Table(root).snapshot().scan(columns=["id"], with_metadata=True))
    return {r["id"]: (r["_metadata"]["row_id"], r["_metadata"]["row_commit_version"])
            for r in t.to_pylist()}


@pytest.mark.parametrize("props", [{"delta.enableRowTracking": "true"},
                                   {"delta.enableChangeDataFeed": "true"},
                                   {"delta.enableRowTracking": "true",
                                    "delta.enableChangeDataFeed": "true"}],
                         ids=["rowtracking", "cdf", "both"])
def test_sqlite_update_on_row_tracking_and_cdf_tables_as_dk_update(tmp_path, props):
    """SQLite's UPDATE (xUpdate: DV bits + the new rows, dk_txn_update_rows) on a table with
    row tracking and/or the change data feed commits what `dk update` of the same statement
    commits on a copy: the rows (delta-rs reads both), the row ids kept and this commit's row
    commit version (dk's _metadata, and the ids equal those before), the change data (delta-rs's
    load_cdf of the commit: update_preimage / update_postimage, plus the delete and insert rows
    of a transaction that mixes them). DELETE alone still writes no change data."""
    t = pa.table({"id": pa.array(range(100), pa.int64()), "k": pa.array([1] * 100, pa.int32()),
                  "s": pa.array(["s%d" % i for i in range(100)])})
    roots = [str(tmp_path / n) for n in ("sq", "dk")]
    for r in roots:
        dk.write_table(r, t, target_file_size=1 << 10, properties=dict(
            props, **{"delta.enableDeletionVectors": "true", "delta.minReaderVersion": "3",
                      "delta.minWriterVersion": "7"}))
    sq, ref = roots
    rt, cdf = "delta.enableRowTracking" in props, "delta.enableChangeDataFeed" in props
    before = rt_rows(sq) if rt else None
    v = version(sq)
    r = dk_sql("CREATE VIRTUAL TABLE t USING delta('%s'); UPDATE t SET k = k + 10, s = 'u' "
               "WHERE id < 5 OR id = 50;" % sq)
    assert r.returncode == 0, r.stderr
    m = dk.Table(ref).update({"k": "k + 10", "s": "'u'"}, predicate="id < 5 OR id = 50")
    assert m["num_updated_rows"] == 6 and version(sq) == version(ref) == v + 1
    cols = "id, k, s"
    assert rs(sq, cols=cols) == rs(ref, cols=cols)
    assert [x["id"] for x in rs(sq, "k = 11", cols="id")] == [0, 1, 2, 3, 4, 50]
    if rt:
        got, want = rt_rows(sq), rt_rows(ref)
        assert got == want
        assert {i: x[0] for i, x in got.items()} == {i: x[0] for i, x in before.items()}
        assert {i for i, x in got.items() if x[1] == v + 1} == {0, 1, 2, 3, 4, 50}
    if cdf:
        def feed(root, start):
            got = pa.table(deltalake.DeltaTable(root).load_cdf(starting_version=start).read_all())
            return sorted((x["id"], x["k"], x["s"], x["_change_type"], x["_commit_version"])
                          for x in got.to_pylist())
        want = []
        for i in (0, 1, 2, 3, 4, 50):
            want += [(i, 1, "s%d" % i, "update_preimage", v + 1), (i, 11, "u", "update_postimage", v + 1)]
        assert feed(sq, v + 1) == feed(ref, v + 1) == sorted(want)
        # UPDATE, DELETE and INSERT in one SQLite transaction: one commit carrying all changes
        r = dk_sql("CREATE VIRTUAL TABLE t USING delta('%s'); BEGIN; UPDATE t SET k = 7 WHERE "
                   "id = 60; DELETE FROM t WHERE id = 61; INSERT INTO t(id, k, s) VALUES "
                   "(500, 5, 'n'); COMMIT;" % sq)
        assert r.returncode == 0, r.stderr
        assert feed(sq, v + 2) == sorted([
            (60, 1, "s60", "update_preimage", v + 2), (60, 7, "s60", "update_postimage", v + 2),
            (61, 1, "s61", "delete", v + 2), (500, 5, "n", "insert", v + 2)])
        r = dk_sql("CREATE VIRTUAL TABLE t USING delta('%s'); DELETE FROM t WHERE id = 62;" % sq)
        assert r.returncode == 0, r.stderr
        log = os.path.join(sq, "_delta_log", "%020d.json" % (v + 3))
        assert not [x for x in open(log) if '"cdc"' in x]


@pytest.mark.parametrize("props", [{}, {"delta.enableRowTracking": "true"}], ids=["plain", "rowtracking"])
def test_sqlite_update_of_one_row_twice_in_a_transaction_is_refused(tmp_path, props):
    """Two UPDATEs of the same row in one SQLite transaction name its DV bit twice, each with a
    new row: committing both would double the row (it did on tables without row tracking). The
    commit is refused on every table, naming the row, and the table is left as it was (delta-rs
    reads the same rows at the same version, through DataFusion: it reads DVs)."""
    t = pa.table({"id": pa.array(range(20), pa.int64()), "k": pa.array([1] * 20, pa.int32())})
    root = str(tmp_path / "t")
    dk.write_table(root, t, properties=dict(
        props, **{"delta.enableDeletionVectors": "true", "delta.minReaderVersion": "3",
                  "delta.minWriterVersion": "7"}))
    v = version(root)
    before = rs(root, cols="id, k")
    r = dk_sql("CREATE VIRTUAL TABLE t USING delta('%s'); BEGIN; UPDATE t SET k = k + 1 WHERE "
               "id = 3; UPDATE t SET k = k + 1 WHERE id = 3; COMMIT;" % root)
    assert r.returncode != 0 and "named twice" in r.stderr, (r.returncode, r.stderr)
    assert version(root) == v
    assert rs(root, cols="id, k") == before and len(before) == 20


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


def copy_plain(tmp_path, name="rs"):
    """The same rows as make(dvs=False) writes: the table delta-rs (which cannot write DVs)
    changes as the oracle."""
    return make(tmp_path, dvs=False, name=name)


def files_holding(root, values):
    """Files whose id min/max (delta-rs's reading of the stats) admit one of values, and
    those that admit a row of their range."""
    adds = pa.table(deltalake.DeltaTable(root).get_add_actions(flatten=True)).to_pylist()
    lo, hi = min(values), max(values)
    return (sum(1 for a in adds if any(a["min.id"] <= v <= a["max.id"] for v in values)),
            sum(1 for a in adds if a["min.id"] <= hi and a["max.id"] >= lo))


@pytest.mark.parametrize("dvs", [True, False], ids=["dv", "cow"])
def test_merge_reads_the_target_in_parallel_as_delta_rs_merges(tmp_path, dvs):
    """A MERGE without NOT MATCHED BY SOURCE clause reads the key columns of each file first,
    then only the matched rows with the columns the clauses use (here t.k and t.d, not t.s),
    files in parallel; copy-on-write then reads a touched file again, batch by batch, for the
    rows it copies. The rows equal delta-rs's MERGE of the same source into a copy of the
    table, and so does the number of rows copied."""
    root, plain = make(tmp_path, dvs), copy_plain(tmp_path)
    ids = list(range(1, N, 7)) + [N + 5, N + 9]  # every file matched
    s = src(ids, [i % 5 for i in ids])
    n_files = len(deltalake.DeltaTable(root).file_uris())

    def run(mb):
        return (mb.when_matched_delete(predicate="s.k = 0")
                .when_matched_update({"k": "t.k + s.k", "s": "'m'"}, predicate="t.d > -90")
                .when_not_matched_insert({"id": "s.id", "k": "s.k", "d": "0.5"}).execute())
    m = run(dk.Table(root).merge(s, on="t.id = s.id", source_alias="s", target_alias="t"))
    mr = run(deltalake.DeltaTable(plain).merge(s, predicate="t.id = s.id", source_alias="s",
                                               target_alias="t"))
    assert m["num_files_after_skipping"] == n_files and has_dv(root) == dvs
    assert rs(root) == rs(plain)
    ci = json.loads(open(os.path.join(root, "_delta_log", "%020d.json" % version(root))).readline())
    copied = int(ci["commitInfo"]["operationMetrics"]["numTargetRowsCopied"])
    assert copied == (0 if dvs else mr["num_target_rows_copied"])
    assert m["num_updated_rows"] > 0 and m["num_deleted_rows"] > 0 and m["num_inserted_rows"] == 2


@pytest.mark.parametrize("dvs", [True, False], ids=["dv", "cow"])
def test_merge_prunes_by_the_set_of_source_keys(tmp_path, dvs):
    """Two source keys far apart: their range admits nearly every file, their set only the
    files whose min/max hold one of them (as delta-rs's stats say); rows as delta-rs merges."""
    root, plain = make(tmp_path, dvs), copy_plain(tmp_path)
    keys = [40, 1500]
    want_files, in_range = files_holding(root, keys)
    assert in_range >= want_files + 3
    s = src(keys + [None], [1, 2, 3])
    m = (dk.Table(root).merge(s, on="t.id = s.id").when_matched_update({"k": "s.k"})
         .when_not_matched_insert({"id": "s.id", "k": "s.k"}).execute())
    (deltalake.DeltaTable(plain).merge(s, predicate="t.id = s.id", source_alias="s",
                                       target_alias="t")
     .when_matched_update({"k": "s.k"}).when_not_matched_insert({"id": "s.id", "k": "s.k"})
     .execute())
    assert m["num_files_after_skipping"] == want_files and m["num_updated_rows"] == 2
    assert rs(root, "id IS NOT NULL") == rs(plain, "id IS NOT NULL")
    assert rs(root, "id IS NULL") == rs(plain, "id IS NULL") == [
        {"id": None, "k": 3, "s": None, "d": None}]


@pytest.mark.parametrize("dvs", [True, False], ids=["dv", "cow"])
def test_delete_and_update_prune_by_an_in_list(tmp_path, dvs):
    """DELETE / UPDATE ... WHERE id IN (...) open only the files whose min/max hold one of the
    values; rows as delta-rs's DELETE / UPDATE of a copy."""
    root, plain = make(tmp_path, dvs), copy_plain(tmp_path)
    ids = [3, 1500, 1990]
    want_files, in_range = files_holding(root, ids)
    assert in_range >= want_files + 3
    m = dk.Table(root).delete("id IN (3, 1500, 1990)")
    deltalake.DeltaTable(plain).delete("id IN (3, 1500, 1990)")
    assert m["num_files_after_skipping"] == want_files and m["num_deleted_rows"] == 3
    assert rs(root) == rs(plain)
    up = [7, 1200]
    want_files, in_range = files_holding(root, up)
    assert in_range > want_files
    m = dk.Table(root).update({"k": "k + 100"}, predicate="id IN (7, 1200)")
    deltalake.DeltaTable(plain).update({"k": "k + 100"}, predicate="id IN (7, 1200)")
    assert m["num_files_after_skipping"] == want_files and m["num_updated_rows"] == 2
    assert rs(root) == rs(plain)
