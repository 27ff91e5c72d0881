"""Self-consistency of the Spark oracle, and agreement of two independent Delta implementations
(Delta-Spark, which wrote the oracle, and delta-rs) on every table and version.

Run: .venv/bin/python -m pytest -q -m interop tests/interop
"""
import calendar
import collections
import datetime as dt
import decimal
import json
import os
import re
import urllib.parse

import pytest

import gen_tables

pytestmark = pytest.mark.interop

TABLES = gen_tables.table_names()
_DEC_CTX = decimal.Context(prec=200)


def load(oracle_dir, name):
    with open(os.path.join(oracle_dir, name, "oracle.json"), encoding="utf-8") as f:
        return json.load(f)


def read_rows(oracle_dir, name, rel):
    with open(os.path.join(oracle_dir, name, rel), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def canon(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def multiset(rows):
    return collections.Counter(canon(r) for r in rows)


def norm_path(p):
    return urllib.parse.unquote(p)


# --- oracle self-consistency ----------------------------------------------------------------

@pytest.mark.parametrize("name", TABLES)
def test_versions_contiguous_and_history(oracle_dir, name):
    o = load(oracle_dir, name)
    vs = [s["version"] for s in o["snapshots"]]
    assert vs == list(range(o["latest_version"] + 1))
    assert [h["version"] for h in o["history"]] == vs
    for s in o["snapshots"]:
        assert s["num_files"] == len(s["files"])
        assert s["total_size"] == sum(f["size"] for f in s["files"])
        assert len({f["path"] for f in s["files"]}) == len(s["files"])
        if s["checkpoint_version"] is not None:
            assert s["checkpoint_version"] <= s["version"]
            assert s["delta_versions_replayed"] == list(range(s["checkpoint_version"] + 1,
                                                              s["version"] + 1))
        else:
            assert s["delta_versions_replayed"] == list(range(0, s["version"] + 1))


@pytest.mark.parametrize("name", TABLES)
def test_row_counts_match_file_stats(oracle_dir, name):
    """rows Spark returns == sum(numRecords) - sum(DV cardinality), at every version."""
    o = load(oracle_dir, name)
    for s in o["snapshots"]:
        if any(f["num_records"] is None for f in s["files"]):
            continue
        live = sum(f["num_records"] for f in s["files"]) - sum(
            f["deletion_vector"]["cardinality"] for f in s["files"] if f["deletion_vector"])
        assert live == s["row_count"], "v%d" % s["version"]


@pytest.mark.parametrize("name", TABLES)
def test_rows_files_match_declared_columns(oracle_dir, name):
    o = load(oracle_dir, name)
    for s in o["snapshots"]:
        rows = read_rows(oracle_dir, name, s["rows_file"])
        assert len(rows) == s["row_count"]
        for r in rows:
            assert list(r) == s["row_columns"]
        logical = [f["name"] for f in s["metadata"]["schema"]["fields"]]
        assert s["row_columns"][:len(logical)] == logical


@pytest.mark.parametrize("name", TABLES)
def test_query_results_are_subsets(oracle_dir, name):
    o = load(oracle_dir, name)
    latest = o["snapshots"][-1]
    logical = [f["name"] for f in latest["metadata"]["schema"]["fields"]]
    all_rows = multiset({k: r[k] for k in logical}
                        for r in read_rows(oracle_dir, name, latest["rows_file"]))
    for q in o["queries"]:
        rows = read_rows(oracle_dir, name, q["rows_file"])
        assert len(rows) == q["row_count"]
        assert not (multiset(rows) - all_rows), q["name"]
        assert q["files_scanned"] is not None, q["name"]
        assert q["files_scanned"] <= latest["num_files"], q["name"]
        if rows:
            assert q["files_scanned"] >= 1, q["name"]


def test_partition_pruning_is_exact_for_partition_only_filters(oracle_dir):
    """partition-only predicates: Spark scans exactly the files whose partition values match."""
    o = load(oracle_dir, "partitioned")
    latest = o["snapshots"][-1]
    by_name = {q["name"]: q for q in o["queries"]}
    files = latest["files"]
    expect = {
        "part_str_eq": lambda pv: pv["p_str"] == "a b",
        "part_str_null": lambda pv: pv["p_str"] is None,
        "part_int": lambda pv: pv["p_int"] == "-7",
        "part_int_null": lambda pv: pv["p_int"] is None,
        "part_bool": lambda pv: pv["p_bool"] == "true",
    }
    for qname, pred in expect.items():
        n = sum(1 for f in files if pred(f["partition_values"]))
        assert by_name[qname]["files_scanned"] == n, qname


@pytest.mark.parametrize("name", [t["name"] for t in gen_tables.TABLES if t.get("time_travel")])
def test_time_travel_oracle(oracle_dir, name):
    o = load(oracle_dir, name)
    tt = o["time_travel"]
    assert tt
    hist = {h["version"]: h["timestamp_ms"] for h in o["history"]}
    for e in tt:
        if e["read_error"] is None:
            assert e["read_version"] is not None
            assert e["read_version"] == e["history_version"], e
            # the resolved version is the last commit at or before the timestamp
            v = e["read_version"]
            assert hist[v] <= e["timestamp_ms"]
            if v + 1 in hist:
                assert hist[v + 1] > e["timestamp_ms"]
    if name == "tt_mtime":
        mt = o["generator"]["commit_mtimes_ms"]
        for s in o["snapshots"]:
            assert s["timestamp_ms"] == mt[str(s["version"])]
        assert any(e["read_error"] for e in tt)  # before-first / after-last are errors


@pytest.mark.parametrize("name", [t["name"] for t in gen_tables.TABLES if t.get("row_tracking")])
def test_row_tracking_ids(oracle_dir, name):
    o = load(oracle_dir, name)
    for s in o["snapshots"]:
        rows = read_rows(oracle_dir, name, s["rows_file"])
        ids = [r["_row_id"] for r in rows]
        assert None not in ids
        assert len(set(ids)) == len(ids)
        assert all(0 <= r["_row_commit_version"] <= s["version"] for r in rows)
        for f in s["files"]:
            assert f["base_row_id"] is not None
            assert f["default_row_commit_version"] is not None


def test_deletion_vector_files_exist(oracle_dir):
    o = load(oracle_dir, "dv")
    seen = 0
    for s in o["snapshots"]:
        for f in s["files"]:
            dv = f["deletion_vector"]
            if dv:
                seen += 1
                assert dv["cardinality"] > 0
                if dv["storageType"] == "u":
                    p = urllib.parse.urlparse(dv["absolute_path"]).path
                    assert os.path.exists(p), p
    assert seen > 0


def test_checkpoint_kinds_present(oracle_dir):
    def names(t):
        return [e["name"] for e in load(oracle_dir, t)["log_files"]]
    assert any(re.fullmatch(r"\d{20}\.checkpoint\.parquet", n) for n in names("ckpt_classic"))
    assert any(re.fullmatch(r"\d{20}\.checkpoint\.\d{10}\.\d{10}\.parquet", n)
               for n in names("ckpt_multipart"))
    for t, ext in (("ckpt_v2_parquet", "parquet"), ("ckpt_v2_json", "json")):
        ns = names(t)
        assert any(re.fullmatch(r"\d{20}\.checkpoint\.[0-9a-f-]{36}\.%s" % ext, n) for n in ns)
        assert any(n.startswith("_sidecars/") for n in ns)
        o = load(oracle_dir, t)
        assert o["snapshots"][-1]["checkpoint_version"] is not None


# --- delta-rs agrees with Spark ---------------------------------------------------------------

def _deltars_table(root, version):
    deltalake = pytest.importorskip("deltalake")
    try:
        return deltalake.DeltaTable(root, version=version)
    except Exception as ex:  # noqa: BLE001
        pytest.skip("delta-rs cannot open %s@v%d: %s" % (root, version, str(ex)[:200]))


@pytest.mark.parametrize("name", TABLES)
def test_deltars_file_set_matches_spark(oracle_dir, name):
    o = load(oracle_dir, name)
    root = os.path.join(oracle_dir, name, o["table_root"])
    for s in o["snapshots"]:
        dt_ = _deltars_table(root, s["version"])
        rs = sorted(os.path.relpath(urllib.parse.unquote(u[7:]) if u.startswith("file://") else u,
                                    root) for u in dt_.file_uris())
        sp = sorted(norm_path(f["path"]) for f in s["files"])
        assert rs == sp, "v%d" % s["version"]
        assert dt_.metadata().partition_columns == s["metadata"]["partition_columns"]
        proto = dt_.protocol()
        assert proto.min_reader_version == s["protocol"]["min_reader_version"]
        assert proto.min_writer_version == s["protocol"]["min_writer_version"]
        try:
            import pyarrow as pa
            adds = pa.table(dt_.get_add_actions(flatten=True))
        except Exception:  # noqa: BLE001 - delta-rs cannot parse some partition values
            continue
        rs_sizes = {urllib.parse.unquote(p): (z, n) for p, z, n in zip(
            adds.column("path").to_pylist(), adds.column("size_bytes").to_pylist(),
            adds.column("num_records").to_pylist())}
        sp_sizes = {norm_path(f["path"]): (f["size"], f["num_records"]) for f in s["files"]}
        assert rs_sizes == sp_sizes, "v%d" % s["version"]


def _enc(v, t):
    """Encode a pyarrow to_pylist() value with Delta schema type t (oracle encoding)."""
    if v is None:
        return None
    if isinstance(t, dict):
        if t["type"] == "struct":
            return {f["name"]: _enc(v.get(f["name"]), f["type"]) for f in t["fields"]}
        if t["type"] == "array":
            return [_enc(x, t["elementType"]) for x in v]
        if t["type"] == "map":
            pairs = [[_enc(k, t["keyType"]), _enc(x, t["valueType"])] for k, x in v]
            pairs.sort(key=lambda p: canon(p[0]))
            return pairs
        raise TypeError(t)
    if t in ("byte", "short", "integer", "long"):
        return int(v)
    if t in ("float", "double"):
        if v != v:
            return "NaN"
        if v in (float("inf"), float("-inf")):
            return "Infinity" if v > 0 else "-Infinity"
        return float(v)
    if t.startswith("decimal"):
        scale = int(t.split(",")[1].rstrip(")"))
        return format(v.quantize(decimal.Decimal(1).scaleb(-scale), context=_DEC_CTX), "f")
    if t == "string":
        return v
    if t == "binary":
        return bytes(v).hex()
    if t == "boolean":
        return bool(v)
    if t == "date":
        return "%04d-%02d-%02d" % (v.year, v.month, v.day)
    if t in ("timestamp", "timestamp_ntz"):
        if v.tzinfo is not None:
            v = v.astimezone(dt.timezone.utc)
        return calendar.timegm(v.timetuple()) * 1000000 + v.microsecond
    raise TypeError(t)


@pytest.mark.parametrize("name", TABLES)
def test_deltars_rows_match_spark(oracle_dir, name):
    """delta-rs' read of the latest version == Spark's (checks the oracle's value encoding too)."""
    o = load(oracle_dir, name)
    s = o["snapshots"][-1]
    root = os.path.join(oracle_dir, name, o["table_root"])
    dt_ = _deltars_table(root, s["version"])
    try:
        tbl = dt_.to_pyarrow_table()
    except Exception as ex:  # noqa: BLE001
        pytest.skip("delta-rs cannot read %s: %s" % (name, str(ex)[:200]))
    fields = s["metadata"]["schema"]["fields"]
    cols = {c: tbl.column(c).to_pylist() for c in tbl.column_names}
    rows = [{f["name"]: _enc(cols[f["name"]][i], f["type"]) for f in fields}
            for i in range(tbl.num_rows)]
    spark_rows = read_rows(oracle_dir, name, s["rows_file"])
    logical = [f["name"] for f in fields]
    spark_rows = [{k: r[k] for k in logical} for r in spark_rows]
    assert multiset(rows) == multiset(spark_rows)
