"""Tests of the shared Python test kit (tests/python/dkharness.py).

Oracles: Python's own datetime/decimal/base64 (via pyarrow's to_pylist conversion, a code path
independent of dkharness' buffer-level conversion), Parquet round trips through pyarrow, and
the expected files of real Delta tables in the shared corpus (written by Delta-Spark).
"""

import base64
import datetime as dt
import decimal
import json
import os
import stat
import struct
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import dkharness as h

UTC = dt.timezone.utc


# ---------------------------------------------------------------------------------------------
# A reference encoder of dk's JSONL row format, built only from Python objects that pyarrow's
# to_pylist produces (independent of dkharness' own Arrow conversion).
# ---------------------------------------------------------------------------------------------

def ref_dk_value(v, t):
    if v is None:
        return None
    if isinstance(t, pa.DictionaryType):
        t = t.value_type
    if pa.types.is_timestamp(t):
        if t.tz is not None:
            return v.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        return v.strftime("%Y-%m-%dT%H:%M:%S.%f")
    if pa.types.is_date(t):
        return v.isoformat()
    if pa.types.is_decimal(t):
        return format(v, "f")
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return base64.b64encode(v).decode()
    if pa.types.is_floating(t):
        return repr(float(v)) if v == v and abs(v) != float("inf") else (
            "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity"))
    if pa.types.is_map(t):
        if pa.types.is_string(t.key_type):
            return {k: ref_dk_value(x, t.item_type) for k, x in v}
        return [[ref_dk_value(k, t.key_type), ref_dk_value(x, t.item_type)] for k, x in v]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [ref_dk_value(x, t.value_type) for x in v]
    if pa.types.is_struct(t):
        return {t.field(i).name: ref_dk_value(v[t.field(i).name], t.field(i).type)
                for i in range(t.num_fields)}
    return v


def ref_dk_rows(table):
    """dk-style rows (parsed JSON objects) of a pyarrow table."""
    fields = [(f.name, f.type) for f in table.schema]
    return [{n: _float_numbers(ref_dk_value(row[n], t), t) for n, t in fields}
            for row in table.to_pylist()]


def ref_dk_jsonl(table):
    """dk-style JSONL text of a pyarrow table (floats as shortest round-trip numbers)."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ref_dk_rows(table))


def _float_numbers(v, t):
    """ref_dk_value gives floats as repr strings; finite ones become JSON numbers again."""
    if v is None:
        return None
    if isinstance(t, pa.DictionaryType):
        t = t.value_type
    if pa.types.is_floating(t):
        return v if v in ("NaN", "Infinity", "-Infinity") else float(v)
    if pa.types.is_map(t):
        if isinstance(v, dict):
            return {k: _float_numbers(x, t.item_type) for k, x in v.items()}
        return [[_float_numbers(k, t.key_type), _float_numbers(x, t.item_type)] for k, x in v]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [_float_numbers(x, t.value_type) for x in v]
    if pa.types.is_struct(t):
        return {t.field(i).name: _float_numbers(v[t.field(i).name], t.field(i).type)
                for i in range(t.num_fields)}
    return v


def ref_manifest_scalar(v, t):
    """Manifest encoding of a to_pylist value, from Python objects (timestamps via datetime)."""
    if v is None:
        return None
    if pa.types.is_timestamp(t):
        epoch = dt.datetime(1970, 1, 1, tzinfo=UTC if t.tz else None)
        return (v - epoch) // dt.timedelta(microseconds=1)
    if pa.types.is_date(t):
        return v.isoformat()
    if pa.types.is_decimal(t):
        return format(v, "f")
    if pa.types.is_binary(t) or pa.types.is_fixed_size_binary(t):
        return v.hex()
    if pa.types.is_floating(t):
        if v != v:
            return "NaN"
        if abs(v) == float("inf"):
            return "Infinity" if v > 0 else "-Infinity"
        return float(v)
    if pa.types.is_map(t):
        pairs = [[ref_manifest_scalar(k, t.key_type), ref_manifest_scalar(x, t.item_type)]
                 for k, x in v]
        return sorted(pairs, key=lambda p: json.dumps(p[0], sort_keys=True,
                                                      separators=(",", ":")))
    if pa.types.is_list(t):
        return [ref_manifest_scalar(x, t.value_type) for x in v]
    if pa.types.is_struct(t):
        return {t.field(i).name: ref_manifest_scalar(v[t.field(i).name], t.field(i).type)
                for i in range(t.num_fields)}
    return v


def ref_manifest_rows(table):
    return [{f.name: ref_manifest_scalar(r[f.name], f.type) for f in table.schema}
            for r in table.to_pylist()]


# ---------------------------------------------------------------------------------------------
# A table with every type dk's encoding covers, edge values included
# ---------------------------------------------------------------------------------------------

def _ts(*a, tz=UTC):
    return dt.datetime(*a, tzinfo=tz)


def all_types_table():
    n_map = pa.map_(pa.int32(), pa.string())
    s_map = pa.map_(pa.string(), pa.int64())
    struct_t = pa.struct([("a", pa.int32()), ("b", pa.struct([("c", pa.string())])),
                          ("l", pa.list_(pa.int16()))])
    cols = {
        "i8": pa.array([-128, 0, 127, None], pa.int8()),
        "i16": pa.array([-32768, 1, 32767, None], pa.int16()),
        "i32": pa.array([-2**31, 2, 2**31 - 1, None], pa.int32()),
        "i64": pa.array([-2**63, 3, 2**63 - 1, None], pa.int64()),
        "f32": pa.array([0.1, -1.5e-30, float("nan"), None], pa.float32()),
        "f64": pa.array([0.1, 1e300, float("-inf"), None], pa.float64()),
        "b": pa.array([True, False, True, None]),
        "s": pa.array(["", "héllo \"q\"\n", "\u2603", None]),
        "bin": pa.array([b"", b"\x00\xff", b"abc", None], pa.binary()),
        "d": pa.array([dt.date(1970, 1, 1), dt.date(1969, 12, 31), dt.date(9999, 12, 31), None]),
        "d_neg": pa.array([-719162, -1, 2932896, None], pa.int32()).cast(pa.date32()),
        "ts": pa.array([_ts(1970, 1, 1), _ts(1969, 12, 31, 23, 59, 59, 999999),
                        _ts(2024, 2, 29, 12, 34, 56, 7), None], pa.timestamp("us", "UTC")),
        "ts_ns": pa.array([0, -1000, 1_700_000_000_123_456_000, None],
                          pa.timestamp("ns", "UTC")),
        "ts_ms": pa.array([0, -1, 1_700_000_000_123, None], pa.timestamp("ms", "UTC")),
        "ntz": pa.array([dt.datetime(2000, 1, 1), dt.datetime(1900, 3, 1, 0, 0, 0, 1),
                         dt.datetime(2038, 1, 19, 3, 14, 8), None], pa.timestamp("us")),
        "dec": pa.array([decimal.Decimal("0.00"), decimal.Decimal("-1.05"),
                         decimal.Decimal("9999999999999.99"), None], pa.decimal128(15, 2)),
        "dec0": pa.array([decimal.Decimal("0"), decimal.Decimal("-7"),
                          decimal.Decimal("1" * 38), None], pa.decimal128(38, 0)),
        "dec38": pa.array([decimal.Decimal("-0.0000000000000000000000000000000000001"),
                           decimal.Decimal("9.9999999999999999999999999999999999999"),
                           decimal.Decimal("0E-37"), None], pa.decimal128(38, 37)),
        "lst": pa.array([[1, None, 3], [], None, [[]][0]], pa.list_(pa.int64())),
        "lst2": pa.array([[[1], [2, 3]], [None, []], [], None], pa.list_(pa.list_(pa.int32()))),
        "st": pa.array([{"a": 1, "b": {"c": "x"}, "l": [1]}, {"a": None, "b": None, "l": None},
                        None, {"a": 4, "b": {"c": None}, "l": []}], struct_t),
        "m_num": pa.array([[(2, "b"), (1, "a")], [], None, [(-5, None)]], n_map),
        "m_str": pa.array([[("z", 1), ("a", 2)], [("", None)], None, []], s_map),
        "dict_s": pa.array(["x", "y", None, "x"]).dictionary_encode(),
    }
    return pa.table(cols)


# Delta schema equivalent of all_types_table (for the Delta-typed entry points).
def all_types_delta_schema():
    def f(name, t):
        return {"name": name, "type": t, "nullable": True, "metadata": {}}
    return {"type": "struct", "fields": [
        f("i8", "byte"), f("i16", "short"), f("i32", "integer"), f("i64", "long"),
        f("f32", "float"), f("f64", "double"), f("b", "boolean"), f("s", "string"),
        f("bin", "binary"), f("d", "date"), f("d_neg", "date"), f("ts", "timestamp"),
        f("ts_ns", "timestamp"), f("ts_ms", "timestamp"), f("ntz", "timestamp_ntz"),
        f("dec", "decimal(15,2)"), f("dec0", "decimal(38,0)"), f("dec38", "decimal(38,37)"),
        f("lst", {"type": "array", "elementType": "long", "containsNull": True}),
        f("lst2", {"type": "array", "elementType": {"type": "array", "elementType": "integer",
                                                    "containsNull": True},
                   "containsNull": True}),
        f("st", {"type": "struct", "fields": [
            f("a", "integer"), f("b", {"type": "struct", "fields": [f("c", "string")]}),
            f("l", {"type": "array", "elementType": "short", "containsNull": True})]}),
        f("m_num", {"type": "map", "keyType": "integer", "valueType": "string",
                    "valueContainsNull": True}),
        f("m_str", {"type": "map", "keyType": "string", "valueType": "long",
                    "valueContainsNull": True}),
        f("dict_s", "string"),
    ]}


# ---------------------------------------------------------------------------------------------
# Scalar formatters against Python's stdlib
# ---------------------------------------------------------------------------------------------

def test_format_date_matches_datetime():
    epoch = dt.date(1970, 1, 1)
    for days in list(range(-800, 800)) + [-719162, 2932896, 11016, -141427, 146097 * 3 + 17]:
        assert h.format_date(days) == (epoch + dt.timedelta(days=days)).isoformat(), days


def test_format_decimal_matches_python_decimal():
    ctx = decimal.Context(prec=100)
    for unscaled in [0, 1, -1, 5, -5, 123456789, -100, 10**37, -(10**38 - 1)]:
        for scale in [0, 1, 2, 5, 18, 38]:
            want = format(ctx.scaleb(decimal.Decimal(unscaled), -scale), "f")
            if "." not in want and scale:
                want += "." + "0" * scale
            assert h.format_decimal(unscaled, scale) == want, (unscaled, scale)


def test_parse_timestamp_floors_nanoseconds_like_canon_arrow():
    ns = pa.array([-1, 1_500, -1_500], pa.timestamp("ns", "UTC"))
    texts = ["1969-12-31T23:59:59.999999999Z", "1970-01-01T00:00:00.000001500Z",
             "1969-12-31T23:59:59.999998500Z"]
    assert [h.parse_timestamp(x, ntz=False) for x in texts] == h.canon_arrow_array(ns)


def test_parse_timestamp_matches_datetime():
    for us in [0, -1, 1, 86_399_999_999, -86_400_000_001, 1_700_000_000_123_456,
               -2_208_988_800_000_000, 253_402_300_799_999_999]:
        d = dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(microseconds=us)
        assert h.parse_timestamp(d.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), ntz=False) == us
        assert h.parse_timestamp(d.strftime("%Y-%m-%dT%H:%M:%S.%f"), ntz=True) == us


# ---------------------------------------------------------------------------------------------
# Path (a): pyarrow -> manifest, against the to_pylist reference
# ---------------------------------------------------------------------------------------------

def test_canon_arrow_matches_pylist_reference():
    t = all_types_table()
    # the reference cannot express dates outside datetime's range; compare those separately
    ref_t = t.drop_columns(["d_neg"])
    got = h.canon_arrow(ref_t)
    want = ref_manifest_rows(ref_t.drop_columns(["dict_s"]).append_column(
        "dict_s", t.column("dict_s").cast(pa.string())))
    h.assert_rows_equal(got, want, ordered=True)
    assert h.canon_arrow_array(t.column("d_neg")) == [
        "0001-01-01", "1969-12-31", "9999-12-31", None]


def test_canon_arrow_float32_is_widened_shortest_double():
    got = h.canon_arrow_array(pa.array([0.234, 36.504], pa.float32()))
    # the manifest's own examples: float32 widened to double, printed shortest round-trip
    assert got == [struct.unpack("<f", struct.pack("<f", 0.234))[0], 36.50400161743164]
    assert json.dumps(got[0]) == "0.23399999737739563"


def test_canon_arrow_sliced_and_chunked_arrays():
    t = all_types_table()
    full = h.canon_arrow(t)
    h.assert_rows_equal(h.canon_arrow(t.slice(1, 2)), full[1:3], ordered=True)
    chunked = pa.concat_tables([t.slice(0, 1), t.slice(1, 3)])
    h.assert_rows_equal(h.canon_arrow(chunked), full, ordered=True)
    st = t.column("st").combine_chunks().slice(1)
    assert h.canon_arrow_array(st) == [r["st"] for r in full[1:]]


def test_canon_arrow_with_delta_schema_equals_arrow_schema():
    t = all_types_table()
    h.assert_rows_equal(h.canon_arrow(t, all_types_delta_schema()), h.canon_arrow(t),
                        ordered=True)


def test_canon_arrow_survives_parquet_round_trip(tmp_path):
    t = all_types_table()
    p = tmp_path / "t.parquet"
    pq.write_table(t, p, compression="snappy")
    back = pq.read_table(p)
    h.assert_rows_equal(h.canon_arrow(back, all_types_delta_schema()), h.canon_arrow(t))


# ---------------------------------------------------------------------------------------------
# Path (b): dk JSONL -> manifest; must agree with path (a)
# ---------------------------------------------------------------------------------------------

def test_canon_dk_jsonl_agrees_with_canon_arrow():
    t = all_types_table()
    text = ref_dk_jsonl(t)
    via_jsonl = h.canon_dk_jsonl(text, all_types_delta_schema())
    h.assert_rows_equal(via_jsonl, h.canon_arrow(t))
    # the Arrow schema drives it just as well
    h.assert_rows_equal(h.canon_dk_jsonl(text, t.schema), h.canon_arrow(t))


def test_canon_dk_jsonl_float32_shortest_forms_agree():
    # dk may print a float32 as its own shortest form ("36.504") or the widened double's
    sch = {"type": "struct", "fields": [{"name": "f", "type": "float", "nullable": True,
                                         "metadata": {}}]}
    a = h.canon_dk_jsonl('{"f":36.504}\n{"f":0.234}\n', sch)
    b = h.canon_dk_jsonl('{"f":36.50400161743164}\n{"f":0.23399999737739563}\n', sch)
    assert a == b == [{"f": 36.50400161743164}, {"f": 0.23399999737739563}]


@pytest.mark.parametrize("typ,value,msg", [
    ("decimal(5,2)", "1.5", "exactly 2 fractional digits"),
    ("decimal(5,2)", 1.5, "decimal string"),
    ("decimal(3,0)", "1234", "significant digits"),
    ("timestamp", "2020-01-01T00:00:00.000000", "must end in 'Z'"),
    ("timestamp_ntz", "2020-01-01T00:00:00.000000Z", "must not carry"),
    ("timestamp", "2020-02-30T00:00:00.000000Z", "invalid calendar"),
    ("date", "2020-1-01", "YYYY-MM-DD"),
    ("integer", 1.5, "JSON integer"),
    ("integer", 2**31, "out of range"),
    ("byte", True, "JSON integer"),
    ("binary", "@@@", "base64"),
    ("boolean", 1, "true/false"),
    ("string", 5, "JSON string"),
])
def test_canon_dk_value_rejects_malformed(typ, value, msg):
    with pytest.raises(h.EncodingError, match=msg):
        h.canon_dk_value(value, h.delta_type(typ), "col")


def test_canon_dk_jsonl_struct_and_map_shape_errors():
    sch = all_types_delta_schema()
    with pytest.raises(h.EncodingError, match="row 0: .*struct fields differ"):
        h.canon_dk_jsonl([{"i8": 1}], sch)
    m = h.delta_type({"type": "map", "keyType": "integer", "valueType": "string"})
    with pytest.raises(h.EncodingError, match="pairs"):
        h.canon_dk_value({"1": "a"}, m, "m")
    with pytest.raises(h.EncodingError, match="duplicate"):
        h.parse_jsonl('{"a":1,"a":2}')


# ---------------------------------------------------------------------------------------------
# Both paths against real Delta tables' expected answers (oracle: Delta-Spark writers)
# ---------------------------------------------------------------------------------------------

def _plain_read_cases():
    out = []
    for c in h.cases("read"):
        if (c["partition_columns"] or c["features"] or c["columns"] != "all"
                or c.get("filter") or c["table_properties"].get("delta.columnMapping.mode")):
            continue
        out.append(c)
    return out


def _read_case_with_pyarrow(case):
    from deltalake import DeltaTable
    kw = {} if case["version"] is None else {"version": case["version"]}
    dtab = DeltaTable(str(h.table_path(case)), **kw)
    files = list(dtab.file_uris())
    tables = [pq.read_table(f.replace("file://", ""), coerce_int96_timestamp_unit="us")
              for f in files]
    # schema evolution: files written before a column was added lack it (read as nulls)
    return [_fill_missing(t, h.delta_type(case["schema_string"])) for t in tables]


def _fill_missing(t, schema):
    for name, _ in schema[1]:
        if name not in t.column_names:
            t = t.append_column(name, pa.nulls(t.num_rows))
    return t


def _as_delta_typed(t, schema):
    """Selects the schema's columns; Spark INT96 timestamps (zone-less in Arrow) become UTC
    when the Delta type is `timestamp`, as dk will print them."""
    cols = []
    for name, lt in schema[1]:
        c = t.column(name)
        if lt == ("prim", "timestamp") and pa.types.is_timestamp(c.type) and c.type.tz is None:
            c = c.cast(pa.timestamp(c.type.unit, "UTC"))
        cols.append(c)
    return pa.table(cols, names=[n for n, _ in schema[1]])


@pytest.mark.parametrize("case", _plain_read_cases(), ids=lambda c: c["id"])
def test_canon_paths_reproduce_golden_expected(case):
    tables = _read_case_with_pyarrow(case)
    schema = h.delta_type(case["schema_string"])
    got_a, got_b = [], []
    for t in tables:
        got_a.extend(h.canon_arrow(t, schema))
        # path (b): dk-style JSONL of the same data, parsed back under the Delta schema
        got_b.extend(h.canon_dk_jsonl(ref_dk_rows(_as_delta_typed(t, schema)), schema))
    want = h.expected_rows(case)
    assert len(want) == case["row_count"]
    h.assert_rows_equal(got_a, want)
    h.assert_rows_equal(got_b, want)


def test_golden_corpus_has_enough_plain_cases():
    assert len(_plain_read_cases()) >= 20


# ---------------------------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------------------------

def test_assert_rows_equal_is_a_multiset_comparison():
    a = [{"x": 1, "y": "a"}, {"x": 2, "y": "b"}, {"x": 1, "y": "a"}, {"x": 3, "y": None}]
    h.assert_rows_equal(a, list(reversed(a)))
    with pytest.raises(AssertionError, match="1 expected rows missing"):
        h.assert_rows_equal(a[:3], a)
    with pytest.raises(AssertionError, match="ordered"):
        h.assert_rows_equal(a, list(reversed(a)), ordered=True)


def test_assert_rows_equal_diff_names_the_field():
    a = [{"id": 1, "s": {"v": 2.5, "w": "x"}}, {"id": 2, "s": None}]
    e = [{"id": 1, "s": {"v": 2.25, "w": "x"}}, {"id": 2, "s": None}]
    with pytest.raises(AssertionError) as ei:
        h.assert_rows_equal(a, e)
    msg = str(ei.value)
    assert "s.v: actual 2.5 != expected 2.25" in msg
    # int and float of equal value are different encodings (1 vs 1.0)
    with pytest.raises(AssertionError):
        h.assert_rows_equal([{"x": 1}], [{"x": 1.0}])


# ---------------------------------------------------------------------------------------------
# Locations, manifest, copies
# ---------------------------------------------------------------------------------------------

def test_locations(monkeypatch, tmp_path):
    monkeypatch.setenv("DK_BUILD", "build-xyz")
    assert h.build_dir() == h.REPO_ROOT / "build-xyz"
    monkeypatch.setenv("DK_BUILD", str(tmp_path))
    assert h.dk_binary() == tmp_path / "dk"
    assert (h.testdata_dir() / "manifest.json").exists()


def test_manifest_and_expected_rows():
    m = h.load_manifest()
    assert "encoding" in m and len(m["cases"]) > 100
    c = h.case_by_id("delta-golden/data-reader-map@latest")
    rows = h.expected_rows(c)
    assert len(rows) == c["row_count"]
    # a projected case: only the listed columns, typed by the schema (doubles stay floats)
    p = h.case_by_id("delta-kernel-defaults/data-reader-partition-values-column-mapping-name"
                     "@latest")
    prow = h.expected_rows(p)
    assert prow and all(set(r) == {"as_int", "as_double", "value"} for r in prow)
    assert all(r["as_double"] is None or isinstance(r["as_double"], float) for r in prow)


def test_copy_table_is_independent(tmp_path):
    c = h.case_by_id("delta-golden/checkpoint@snapshot")
    p = h.copy_table(c, tmp_path)
    assert p != h.table_path(c) and (p / "_delta_log" / "_last_checkpoint").exists()
    (p / "_delta_log" / "_last_checkpoint").unlink()
    assert (h.table_path(c) / "_delta_log" / "_last_checkpoint").exists()
    p2 = h.copy_table(c, tmp_path)
    assert p2 != p
    assert h.copy_table(c).exists()


# ---------------------------------------------------------------------------------------------
# run_dk failure detection, with a fake dk
# ---------------------------------------------------------------------------------------------

@pytest.fixture
def fake_dk(tmp_path, monkeypatch):
    def make(script):
        exe = tmp_path / "dk"
        exe.write_text("#!/bin/sh\n" + script + "\n")
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
        monkeypatch.setenv("DK_BUILD", str(tmp_path))
        h.dk_has_command.cache_clear()
        return exe
    yield make
    h.dk_has_command.cache_clear()


def test_run_dk_returns_output(fake_dk):
    fake_dk('echo "out $1"; echo err >&2; exit 3')
    assert h.run_dk("x") == (3, "out x\n", "err\n")


def test_run_dk_fails_on_signal(fake_dk):
    fake_dk("kill -SEGV $$")
    with pytest.raises(pytest.fail.Exception, match="SIGSEGV"):
        h.run_dk()


@pytest.mark.parametrize("report", [
    "==1==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x1",
    "src/x.c:10:5: runtime error: signed integer overflow",
    "==1==ERROR: LeakSanitizer: detected memory leaks",
])
def test_run_dk_fails_on_sanitizer_report(fake_dk, report):
    fake_dk(f"echo '{report}' >&2; exit 1")
    with pytest.raises(pytest.fail.Exception, match="sanitizer report"):
        h.run_dk()


def test_run_dk_fails_on_timeout(fake_dk):
    fake_dk("sleep 5")
    with pytest.raises(pytest.fail.Exception, match="timed out"):
        h.run_dk(timeout=0.5)


def test_run_dk_check_and_missing_binary(fake_dk, monkeypatch, tmp_path):
    fake_dk("exit 1")
    with pytest.raises(pytest.fail.Exception, match="exited 1"):
        h.run_dk(check=True)
    monkeypatch.setenv("DK_BUILD", str(tmp_path / "nowhere"))
    with pytest.raises(pytest.fail.Exception, match="not found"):
        h.run_dk()


def test_dk_has_command(fake_dk):
    fake_dk('case "$1" in parquet) echo "dk parquet: not built yet" >&2; exit 2;; '
            'files) echo "usage: dk files TABLE" >&2; exit 2;; '
            '*) echo "dk: unknown command \'$1\'" >&2; exit 2;; esac')
    assert not h.dk_has_command("parquet", "cat")
    assert h.dk_has_command("files")
    assert not h.dk_has_command("scan")


# ---------------------------------------------------------------------------------------------
# The real dk binary
# ---------------------------------------------------------------------------------------------

def test_dk_version():
    rc, out, _ = h.run_dk("version")
    assert rc == 0 and out.startswith("dk ")


@pytest.mark.dk_command("parquet", "cat")
@pytest.mark.parametrize("case", _plain_read_cases(), ids=lambda c: c["id"])
def test_dk_parquet_cat_reproduces_golden_expected(case):
    """End to end through the kit: dk's JSONL of every data file of a plain golden table,
    canonicalised under the table's Delta schema, equals the Delta-Spark expected answer."""
    schema = h.delta_type(case["schema_string"])
    names = [n for n, _ in schema[1]]
    got = []
    for path in _files(case):
        rc, out, err = h.run_dk("parquet", "cat", path, "--format", "jsonl")
        assert rc == 0, err
        rows = h.parse_jsonl(out)
        # schema evolution: a file written before a column existed reads it as null
        rows = [{**r, **{n: None for n in names if n not in r}} for r in rows]
        got.extend(h.canon_dk_jsonl(rows, schema))
    h.assert_rows_equal(got, h.expected_rows(case))


def _files(case):
    from deltalake import DeltaTable
    kw = {} if case["version"] is None else {"version": case["version"]}
    return [f.replace("file://", "")
            for f in DeltaTable(str(h.table_path(case)), **kw).file_uris()]
