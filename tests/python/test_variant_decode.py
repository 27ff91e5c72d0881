"""The test kit's Variant decoder (variant_decode.py) against DuckDB's Variant reader.

Oracle: DuckDB writes Variant values of every primitive kind it has into a Parquet file and
renders the same values as JSON (``v::JSON``); our decoder reads the raw (metadata, value)
bytes of that file through pyarrow. The two JSON conventions differ only where Spark (whose
rendering the decoder follows, see its docstring) and DuckDB differ: the UTC offset of
timestamps (``+00:00`` vs ``+00``), binary (base64 vs ``\\xNN`` escapes) and float (shortest
float32 text vs the widened double); those are compared by value. DuckDB shreds the values of
the column's dominant type into ``typed_value``; the filler rows make that type boolean (so
booleans are tested inside an object) and every value under test stays in the binary ``value``.
"""

import base64
import json
import struct
from decimal import Decimal

import pytest

import variant_decode as vd

duckdb = pytest.importorskip("duckdb")
pq = pytest.importorskip("pyarrow.parquet")

VALUES = {  # id -> DuckDB expression; kind for the comparison
    1: ("42::INTEGER", "json"),
    2: ("'hello'", "json"),
    3: ("DATE '2024-02-29'", "json"),
    4: ("TIMESTAMPTZ '2024-01-01 12:34:56.5+00'", "tstz"),
    5: ("1.25::DECIMAL(10,2)", "json"),
    6: ("{'b': [1, 2.5::DOUBLE, NULL], 'a': 'x', 'c': {'x': 'y', 'z': 7}, 't': true, "
        "'f': false}", "json"),
    7: (r"'\x01\xFF\x00'::BLOB", "blob"),
    8: ("TIMESTAMP '2020-05-06 07:08:09.000123'", "json"),
    9: ("uuid '12345678-1234-5678-1234-567812345678'", "json"),
    10: ("1.5::FLOAT", "float"),
    11: ("TIME '01:02:03.25'", "json"),
    12: ("(-123456789012345678901234.5678)::DECIMAL(38,4)", "decimal"),
    13: ("(-5)::TINYINT", "json"),
    14: ("300::SMALLINT", "json"),
    15: ("9007199254740993::BIGINT", "json"),
    16: ("repeat('z', 100)", "json"),  # long string (primitive type 16)
    17: ("(-1.75)::DOUBLE", "json"),
    18: ("TIMESTAMP_NS '1969-12-31 23:59:59.123456789'", "json"),
    19: ("DATE '1900-01-01'", "json"),
    20: ("[[1, 2], [3], []]", "json"),
    21: ("0.1::FLOAT", "float"),
    22: ("123456789.123456789::DECIMAL(18,9)", "decimal"),
    24: ("''", "json"),
    25: ("{'k': NULL}", "json"),
}


@pytest.fixture(scope="module")
def decoded(tmp_path_factory):
    path = tmp_path_factory.mktemp("variant") / "v.parquet"
    rows = ", ".join(f"({i}, ({e})::VARIANT)" for i, (e, _) in VALUES.items())
    con = duckdb.connect()
    con.sql(f"COPY (SELECT * FROM (VALUES {rows}) t(i, v) UNION ALL "
            f"SELECT 1000 + range, true::VARIANT FROM range(40)) TO '{path}' (FORMAT parquet)")
    duck = dict(con.sql(f"SELECT i, v::JSON FROM '{path}' WHERE i < 1000").fetchall())
    ours = {}
    for r in pq.read_table(path).to_pylist():
        if r["i"] < 1000:
            v = r["v"]
            assert v["value"] is not None, f"row {r['i']} was shredded: the test needs raw bytes"
            ours[r["i"]] = (v["metadata"], v["value"])
    return duck, ours


@pytest.mark.parametrize("i", sorted(VALUES))
def test_decoder_agrees_with_duckdb(decoded, i):
    duck, ours = decoded
    kind = VALUES[i][1]
    got = vd.decode(*ours[i])
    if kind == "json":
        assert got == json.loads(duck[i])
    elif kind == "tstz":
        want = json.loads(duck[i])
        assert want.endswith("+00") and got == want + ":00"
    elif kind == "blob":
        text = json.loads(duck[i])
        want = bytes(int(h, 16) for h in text.split("\\x")[1:])
        assert base64.b64decode(got) == want
    elif kind == "float":
        f32 = struct.unpack("<f", struct.pack("<f", json.loads(duck[i])))[0]
        assert got == float(repr(got)) and struct.unpack("<f", struct.pack("<f", got))[0] == f32
        assert len(repr(got)) <= len(repr(f32))  # the shortest text, as Spark prints floats
    elif kind == "decimal":  # exact digits (json.loads would round both sides to a double)
        assert vd.decode(*ours[i], exact_decimals=True) == Decimal(duck[i])
    else:
        raise AssertionError(kind)


@pytest.mark.parametrize("meta,value,what", [
    (b"", b"\x00", "metadata header"),
    (b"\x02\x00\x00", b"\x00", "unsupported version"),
    (b"\x01\x05\x00", b"\x00", "offsets"),
    (b"\x01\x00\x00", b"", "empty value"),
    (b"\x01\x00\x00", b"\x15ab", "short string"),
    (b"\x01\x00\x00", b"\x18\x01\x02", "needs 8 bytes"),
    (b"\x01\x00\x00", b"\xfc", "unknown primitive"),
    (b"\x01\x00\x00", b"\x02\x01\x00\x00\x01\x00", "not in the dictionary"),
    (b"\x01\x00\x00", b"\x03\x02\x00\x05\x01\x00", "outside the fields"),
    (b"\x01\x00\x00", b"\x03\x01\x00\x05\x00", "past"),
])
def test_malformed_bytes_raise(meta, value, what):
    with pytest.raises(vd.VariantError, match=what):
        vd.decode(meta, value)
