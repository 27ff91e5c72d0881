"""Sanity of the change-data-feed / streaming oracle (tests/interop/cdf_oracle.py), and the
peers against it: Spark's answers must be self-consistent before dk is compared with them,
and delta-rs / polars-deltalake (delta-kernel-rs) must agree with Spark where they support a
table — each disagreement below is pinned with its cause.

* every successful range [a, b] is the multiset union of its single versions [v, v] (CDF is
  per commit; the read schema is the same for non-column-mapping tables);
* a stream's offsets never move back, each batch's rows are as many as Spark counted, and the
  concatenation of a stream's batches does not depend on the admission limits (same start
  and options, maxFilesPerTrigger 1 or 2 or maxBytesPerTrigger vs the default);
* ranges and streams that must fail do, with the Delta error class dk maps its errors to;
* polars-deltalake `scan_cdf` equals Spark on every range it answers, except on
  column-mapping tables (it reads pre-rename data as null and uses the latest schema instead
  of the end version's) and `_commit_timestamp` where commit files share an mtime (Spark
  makes commit timestamps monotonic, +1 ms; delta-kernel-rs does not); delta-rs `load_cdf` equals Spark on every range it answers except
  `_commit_timestamp`, which delta-rs takes from commitInfo.timestamp instead of the commit
  file's modification time that PROTOCOL.md and Spark use (without in-commit timestamps).
"""
import collections
import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cdf_peers as cp  # noqa: E402

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def cdf():
    try:
        import pyspark  # noqa: F401
        import delta  # noqa: F401
    except ImportError:
        pytest.skip("pyspark/delta-spark not installed (run scripts/install_spark.sh)")
    out = cp.cdf_dir()
    import cdf_oracle
    built = all(os.path.exists(os.path.join(out, n, "cdf_oracle.json"))
                for n in cdf_oracle.table_names())
    if not built and os.environ.get("DK_CDF_ORACLE", "") in ("", "0"):
        pytest.skip("CDF oracle not built: `make test-cdf-oracle` (or DK_CDF_ORACLE=1) builds "
                    "it (one Spark session, ~10 min on an idle 2-core machine)")
    r = subprocess.run([os.path.join(cp.REPO, "scripts", "cdf_tables.sh"), out],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=5400)
    if r.returncode != 0:
        pytest.fail("cdf oracle build failed:\n" + r.stdout[-6000:])
    return out


def _version_ranges(o):
    return {(r["start"], r["end"]): r for r in o["ranges"]
            if r["by"] == "version" and r.get("end") is not None}


def test_tables_present(cdf):
    names = set(cp.tables(cdf))
    import cdf_oracle
    assert names == set(cdf_oracle.table_names())


def test_ranges_are_unions_of_versions(cdf):
    checked = 0
    for name in cp.tables(cdf):
        o = cp.load(cdf, name)
        vr = _version_ranges(o)
        for (a, b), r in vr.items():
            if not r.get("rows_file") or a == b or b > o["latest_version"]:
                continue
            singles = [vr.get((v, v)) for v in range(a, b + 1)]
            if any(s is None or not s.get("rows_file") for s in singles):
                continue
            if any(_columns(cdf, name, s) not in (None, _columns(cdf, name, r)) for s in singles):
                continue  # column mapping: each range reads with its end version's schema
            union = sorted(x for s in singles for x in cp.rows_of(cdf, name, s["rows_file"]))
            assert cp.rows_of(cdf, name, r["rows_file"]) == union, (name, a, b)
            checked += 1
    assert checked >= 30


def _columns(cdf, name, r):
    rows = cp.rows_of(cdf, name, r["rows_file"])
    return list(json.loads(rows[0]).keys()) if rows else None


EXPECTED_RANGE_ERRORS = {
    # (table, start, end) -> Spark's error class
    ("cdf_basic", 9, 8): "DELTA_INVALID_CDC_RANGE",
    ("cdf_basic", 10, 11): "DELTA_CDC_START_VERSION_AFTER_LATEST",
    ("cdf_later", 0, 0): "DELTA_MISSING_CHANGE_DATA",
    ("cdf_colmap", 0, 8): "DELTA_CHANGE_DATA_FEED_INCOMPATIBLE_SCHEMA_CHANGE",
}


def test_expected_errors(cdf):
    for (name, a, b), cls in EXPECTED_RANGE_ERRORS.items():
        r = _version_ranges(cp.load(cdf, name)).get((a, b))
        assert r is not None and r.get("error_class") == cls, (name, a, b, r)
    # a range over vacuumed data files fails (the files are gone), the last version reads
    o = cp.load(cdf, "cdf_vacuumed")
    vr = _version_ranges(o)
    assert vr[(1, 1)].get("error_class"), vr[(1, 1)]
    assert vr[(o["latest_version"], o["latest_version"])].get("rows_file")


def _streams(cdf):
    for name in cp.tables(cdf):
        for s in cp.load(cdf, name)["streams"]:
            yield name, s


DV_TABLES = {"cdf_dv", "cdf_row_tracking"}


def test_stream_offsets_and_counts(cdf):
    n = 0
    for name, s in _streams(cdf):
        prev = None
        for b in s["batches"]:
            assert b.get("end_offset"), (name, s["name"], b["batch_id"])
            # Spark counts a DV file's rows before its deletion vector is applied
            if name in DV_TABLES:
                assert len(b["rows"]) <= b["num_input_rows"], (name, s["name"], b["batch_id"])
            else:
                assert len(b["rows"]) == b["num_input_rows"], (name, s["name"], b["batch_id"])
            e = b["end_offset"]
            if prev is not None:
                assert b["start_offset"] == prev, (name, s["name"])
                key = lambda o: (o["reservoirVersion"], o["index"])  # noqa: E731
                assert key(e) >= key(prev)
                assert not (prev["isStartingVersion"] is False and e["isStartingVersion"])
            prev = e
            n += 1
    assert n >= 40


def _concat(s):
    return sorted(r for b in s["batches"] for r in b["rows"])


LIMIT_KEYS = ("maxFilesPerTrigger", "maxBytesPerTrigger")


def test_stream_limits_do_not_change_the_data(cdf):
    compared = 0
    for name in cp.tables(cdf):
        groups = collections.defaultdict(list)
        for s in cp.load(cdf, name)["streams"]:
            if s["error_class"] or s["live"]:
                continue
            key = (s["cdf"], tuple(sorted((k, v) for k, v in s["options"].items()
                                          if k not in LIMIT_KEYS and k != "excludeRegex")))
            if "excludeRegex" not in s["options"]:
                groups[key].append(s)
        for g in groups.values():
            for s in g[1:]:
                assert _concat(s) == _concat(g[0]), (name, s["name"], g[0]["name"])
                compared += 1
    assert compared >= 5


EXPECTED_STREAM_ERRORS = {
    ("cdf_stream", "v0"): "DELTA_SOURCE_IGNORE_DELETE",
    ("cdf_stream", "v0_ignore_deletes"): "DELTA_SOURCE_TABLE_IGNORE_CHANGES",
    ("cdf_basic", "v0"): "DELTA_SOURCE_TABLE_IGNORE_CHANGES",
    ("cdf_colmap", "v0"): "DELTA_STREAMING_INCOMPATIBLE_SCHEMA_CHANGE_USE_SCHEMA_LOG",
    ("cdf_stream", "bad_both"): "DELTA_STARTING_VERSION_AND_TIMESTAMP_BOTH_SET",
    ("cdf_stream", "bad_exclude_regex"): "DELTA_REGEX_OPT_SYNTAX_ERROR",
    ("cdf_live", "live_add_column"): "DELTA_SCHEMA_CHANGED_WITH_STARTING_OPTIONS",
}


def test_stream_expected_errors(cdf):
    got = {(name, s["name"]): s["error_class"] for name, s in _streams(cdf)}
    for k, cls in EXPECTED_STREAM_ERRORS.items():
        assert got.get(k) == cls, (k, got.get(k))
    # excludeRegex drops files of p=b after admission: a subset of the same start's rows
    st = {s["name"]: s for s in cp.load(cdf, "cdf_stream")["streams"]}
    ex, full = _concat(st["v0_skip_exclude_b"]), _concat(st["v0_skip_change_commits"])
    assert ex and set(ex) < set(full) and all('"p":"b"' not in r for r in ex)
    # Java regex syntax ((?i), \d{5}) excludes the same files; a lookahead keeps only p=a
    assert _concat(st["v0_skip_exclude_java"]) == ex
    la = _concat(st["cdf_v0_exclude_lookahead"])
    assert la and all('"p":"a"' in r for r in la)
    # an explicit startingVersion whose commit was cleaned up fails whatever failOnDataLoss
    # says (Spark checks the version exists before streaming; failOnDataLoss=false only
    # restarts a running stream whose next commit vanished); from the checkpoint on it reads
    tr = {s["name"]: s for s in cp.load(cdf, "cdf_stream_truncated")["streams"]}
    for k in ("v1_fail_on_data_loss", "v1_no_fail_on_data_loss", "cdf_v1_no_fail"):
        assert tr[k]["error_class"] == "DELTA_VERSION_NOT_FOUND", (k, tr[k]["error_class"])
    assert not tr["v5"]["error_class"] and tr["v5"]["batches"]


def _peer_compare(cdf, peer, skip_tables, drop, drop_on=None):
    agree, differ, unsupported = 0, [], 0
    for name in cp.tables(cdf):
        if name in skip_tables:
            continue
        drop_here = tuple(drop) + tuple((drop_on or {}).get(name, ()))
        o = cp.load(cdf, name)
        root = os.path.join(cdf, name, "delta")
        for (a, b), r in sorted(_version_ranges(o).items()):
            if not r.get("rows_file"):
                continue
            spark = cp.rows_of(cdf, name, r["rows_file"])
            cols = _columns(cdf, name, r) or [c for c, _ in o["columns"]]
            try:
                got = cp.encode_arrow(peer(root, a, b), cols, drop_here)
            except Exception:  # noqa: BLE001 - the peer does not support this table/range
                unsupported += 1
                continue
            if got == cp.drop_keys(spark, drop_here):
                agree += 1
            else:
                differ.append((name, a, b))
    return agree, differ, unsupported


def test_polars_deltalake_agrees_with_spark(cdf):
    pytest.importorskip("polars_deltalake")
    # the corpus table's commit files share one mtime: Spark makes commit timestamps
    # monotonic (v1 = v0 + 1 ms), delta-kernel-rs takes the raw mtime
    agree, differ, _ = _peer_compare(cdf, cp.polars_cdf, {"cdf_colmap"}, (), drop_on={
        "corpus_cdf_operation_params": ("_commit_timestamp",)})
    assert not differ, differ
    assert agree >= 40


def test_deltars_agrees_with_spark_except_commit_timestamp(cdf):
    agree, differ, _ = _peer_compare(cdf, cp.deltars_cdf, set(), ("_commit_timestamp",))
    assert not differ, differ
    assert agree >= 20
