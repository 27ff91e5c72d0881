"""Hardening (issue 18, item 5): input that used to give a wrong answer silently.

Each case is a copy of a corpus table with one field damaged; the expected answers are the
corpus's expected rows. Before the fix: a schemaString object read as an empty schema; a DV
without cardinality read as deleting nothing (rows the DV deletes came back); an out-of-range
numRecords was clamped to INT64_MAX, so LIMIT pushdown dropped files it needed and two huge
counts compared equal ("every row is null": IS NOT NULL skipped the file); LIMIT/OFFSET near
INT64_MAX overflowed in the SQLite connector (UBSan); a file listed twice in a checkpoint, or
a sidecar named twice, was read twice.
"""

import json
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dkharness

PRIMS = "delta-golden/data-reader-primitives"
DV = "delta-kernel-defaults/basic-dv-no-checkpoint"
DV_CP = "delta-kernel-defaults/basic-dv-with-checkpoint"
V2 = "delta-golden/v2-checkpoint-json"
CKPT = "delta-golden/basic-with-inserts-deletes-checkpoint"
HUGE = "99999999999999999999"  # > INT64_MAX


def expected(case):
    with open(dkharness.testdata_dir() / f"{case}.expected.jsonl") as f:
        return [json.loads(x) for x in f]


def rewrite_json(path, fn):
    """Applies fn(action dict) -> action dict | None | list to every line of a JSON log file."""
    out = []
    for ln in path.read_text().splitlines():
        r = fn(json.loads(ln))
        if r is None:
            continue
        out.extend(r if isinstance(r, list) else [r])
    path.write_text("".join(json.dumps(a) + "\n" for a in out))


def scan_rows(dk, t, *extra):
    rc, out, err = dk("scan", t, *extra)
    assert rc == 0, err
    return [json.loads(x) for x in out.splitlines()]


def test_schema_string_object_is_corrupt(dk, tmp_path):
    t = dkharness.copy_table(PRIMS, tmp_path)
    c0 = t / "_delta_log" / "00000000000000000000.json"

    def f(a):
        if "metaData" in a:
            a["metaData"]["schemaString"] = json.loads(a["metaData"]["schemaString"])
        return a
    rewrite_json(c0, f)
    rc, out, err = dk("describe", t)
    assert rc == 1, out
    assert "schemaString is not a string" in err and c0.name in err, err


def test_configuration_not_an_object_is_corrupt(dk, tmp_path):
    t = dkharness.copy_table(PRIMS, tmp_path)
    c0 = t / "_delta_log" / "00000000000000000000.json"

    def f(a):
        if "metaData" in a:
            a["metaData"]["configuration"] = ["delta.columnMapping.mode", "name"]
        return a
    rewrite_json(c0, f)
    rc, _, err = dk("describe", t)
    assert rc == 1 and "configuration is not an object" in err and c0.name in err, err


def test_dv_without_cardinality_is_corrupt(dk, tmp_path):
    t = dkharness.copy_table(DV, tmp_path)
    n = len(expected(DV))
    assert len(scan_rows(dk, t)) == n
    c1 = t / "_delta_log" / "00000000000000000001.json"

    def f(a):
        d = a.get("add", {}).get("deletionVector")
        if d:
            del d["cardinality"]
        return a
    rewrite_json(c1, f)
    rc, out, err = dk("scan", t)
    assert rc == 1, f"{len(out.splitlines())} rows instead of an error"
    assert "without a valid cardinality" in err and "version 1" in err, err


def test_dv_without_cardinality_in_a_checkpoint_is_corrupt(dk, tmp_path):
    t = dkharness.copy_table(DV_CP, tmp_path)
    assert len(scan_rows(dk, t)) == len(expected(DV_CP))
    cp = sorted((t / "_delta_log").glob("*.checkpoint.parquet"))[-1]
    tab = pq.read_table(cp)
    add = tab.column("add").combine_chunks()
    dv = add.field("deletionVector")
    card = dv.field("cardinality")
    new_dv = pa.StructArray.from_arrays(
        [dv.field(f.name) if f.name != "cardinality" else pa.nulls(len(card), card.type)
         for f in dv.type], fields=list(dv.type), mask=dv.is_null())
    new_add = pa.StructArray.from_arrays(
        [add.field(f.name) if f.name != "deletionVector" else new_dv for f in add.type],
        fields=list(add.type), mask=add.is_null())
    tab = tab.set_column(tab.schema.get_field_index("add"), tab.schema.field("add"), new_add)
    pq.write_table(tab, cp)
    # keep only the commits after the checkpoint, so that the DV is known from it alone
    v = int(cp.name.split(".")[0])
    for c in (t / "_delta_log").glob("*.json"):
        if int(c.name.split(".")[0]) <= v:
            c.unlink()
    rc, out, err = dk("scan", t)
    assert rc == 1, f"{len(out.splitlines())} rows instead of an error"
    assert "without a valid cardinality" in err, err


def set_stats(t, stats):
    c0 = t / "_delta_log" / "00000000000000000000.json"

    def f(a):
        if "add" in a:
            a["add"]["stats"] = stats
        return a
    rewrite_json(c0, f)
    # the raw text: the huge integers must reach dk as written
    c0.write_text(c0.read_text().replace('"@HUGE@"', HUGE).replace('"@HUGE-1@"', HUGE[:-1] + "8"))


@pytest.mark.parametrize("stats", [
    '{"numRecords":@HUGE@}',
    '{"numRecords":1e30}',
    '{"numRecords":1.5}',
    '{"numRecords":-3}',
    '{"minValues":{},"numRecords":@HUGE@}',
])
def test_num_records_out_of_range_is_no_statistic(dk, tmp_path, stats):
    t = dkharness.copy_table(PRIMS, tmp_path)
    set_stats(t, stats.replace("@HUGE@", HUGE))
    n = len(expected(PRIMS))
    # LIMIT pushdown counts rows by numRecords: a clamped count dropped the second file
    for lim in (n, n - 1):
        assert len(scan_rows(dk, t, "--limit", str(lim))) == lim
    rc, out, err = dk("sql", f"SELECT count(*) AS c FROM (SELECT * FROM delta_scan('{t}') "
                      f"LIMIT {n})", "--format", "jsonl")
    assert rc == 0 and json.loads(out) == {"c": n}, (out, err)


def test_huge_null_counts_do_not_compare_equal(dk, tmp_path):
    t = dkharness.copy_table(PRIMS, tmp_path)
    set_stats(t, json.dumps({"numRecords": "@HUGE@", "nullCount": {"as_int": "@HUGE-1@"}}))
    want = sum(1 for r in expected(PRIMS) if r["as_int"] is not None)
    assert want > 0
    assert len(scan_rows(dk, t, "--where", "as_int IS NOT NULL")) == want


def test_sql_limit_offset_near_int64_max(dk, tmp_path):
    t = dkharness.copy_table(PRIMS, tmp_path)
    n = len(expected(PRIMS))
    for lim, off, want in ((9223372036854775807, 2, n - 2), (9223372036854775806, 1, n - 1),
                           (9223372036854775807, 9223372036854775807, 0), (3, 2, 3)):
        rc, out, err = dk("sql", f"SELECT count(*) AS c FROM (SELECT * FROM delta_scan('{t}') "
                          f"LIMIT {lim} OFFSET {off})", "--format", "jsonl")
        assert rc == 0 and json.loads(out) == {"c": want}, (lim, off, out, err)


def v2_top(t):
    (top,) = list((t / "_delta_log").glob("*.checkpoint.*.json"))
    return top


def only_checkpoint(t, v):
    for c in (t / "_delta_log").glob("*.json"):
        if c.name.count(".") == 1 and int(c.name.split(".")[0]) <= v:
            c.unlink()


def test_sidecar_named_twice_is_read_once(dk, tmp_path):
    t = dkharness.copy_table(V2, tmp_path)
    n = len(expected(V2))
    top = v2_top(t)
    rewrite_json(top, lambda a: [a] * (50 if "sidecar" in a else 1))
    only_checkpoint(t, 2)
    assert len(scan_rows(dk, t)) == n
    rc, out, _ = dk("files", t, "--json")
    assert rc == 0 and len(json.loads(out)["files"]) == len({f["path"] for f in json.loads(out)["files"]})


def test_file_listed_twice_in_a_checkpoint_is_read_once(dk, tmp_path):
    # in a V2 JSON checkpoint: an add line of a commit, twice, beside the sidecars' rows
    t = dkharness.copy_table(V2, tmp_path)
    n = len(expected(V2))
    top = v2_top(t)
    sc = sorted((t / "_delta_log" / "_sidecars").glob("0*.parquet"))[0]
    rows = pq.read_table(sc).to_pylist()
    add = next(r["add"] for r in rows if r.get("add"))
    line = {"add": {k: add[k] for k in ("path", "partitionValues", "size", "modificationTime",
                                        "dataChange")}}
    line["add"]["partitionValues"] = dict(line["add"]["partitionValues"] or {})
    rewrite_json(top, lambda a: [a, line, line] if "checkpointMetadata" in a else a)
    only_checkpoint(t, 2)
    assert len(scan_rows(dk, t)) == n


def test_file_listed_twice_in_a_classic_checkpoint_is_read_once(dk, tmp_path):
    t = dkharness.copy_table(CKPT, tmp_path)
    n = len(expected(CKPT))
    cp = sorted((t / "_delta_log").glob("*.checkpoint.parquet"))[-1]
    tab = pq.read_table(cp)
    adds = [i for i, a in enumerate(tab.column("add").to_pylist()) if a]
    tab = pa.concat_tables([tab, tab.take(adds[:3]), tab.take(adds[:1])])
    pq.write_table(tab, cp)
    v = int(cp.name.split(".")[0])
    only_checkpoint(t, v)
    assert len(scan_rows(dk, t)) == n
    shutil.rmtree(t)



@pytest.mark.parametrize("where", ["col1 > 2. AND col2 LIKE 'fo%'", "col1 = 30.0",
                                   "col1 IN (30.0, 40)", "col1 > 2.5 AND part = 1"])
def test_sql_integral_real_constraint(dk, where):
    """Found by sql_fuzzer: SQLite hands xBestIndex `2.` as INTEGER 2 (omitted, exact) and
    xFilter as REAL 2.0, which failed with "constraint on col1 lost". The oracle is SQLite
    itself over the corpus table's expected rows."""
    import sqlite3
    case = "delta-golden/dv-partitioned-with-checkpoint"
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t(part INTEGER, col1 INTEGER, col2 TEXT)")
    db.executemany("INSERT INTO t VALUES (?, ?, ?)",
                   [(r["part"], r["col1"], r["col2"]) for r in expected(case)])
    want = db.execute(f"SELECT count(*) FROM t WHERE {where}").fetchone()[0]
    t = dkharness.table_path(case)
    rc, out, err = dk("sql", f"SELECT count(*) AS c FROM delta_scan('{t}') WHERE {where}",
                      "--format", "jsonl")
    assert rc == 0 and json.loads(out) == {"c": want}, (out, err)
