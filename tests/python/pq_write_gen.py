"""Random Arrow tables for the Parquet writer's oracle matrix (tests/python/test_parquet_write_*,
tests/interop/test_parquet_write_spark.py): every type dk writes, nulls none/some/all, nested
lists/structs/maps (empty lists, null elements, null map values), long strings.

    table, info = random_table(seed, rows)      # deterministic in (seed, rows)
    params = random_params(seed)                # writer options for the case

The expected values are the input itself: readers (pyarrow, DuckDB, Spark, dk) must give it back.
"""
import datetime
import decimal
import math
import random
import struct

import pyarrow as pa

UTC = datetime.timezone.utc

FLAT = ["bool", "int8", "int16", "int32", "int64", "float", "double", "dec5_2", "dec18_3",
        "dec38_10", "date", "ts_utc", "ts_ntz", "ts_ms", "string", "large_string",
        "string_view", "binary", "fixed5"]
NESTED = ["list_int", "large_list_str", "struct_deep", "map_str_long", "list_struct",
          "map_int_list", "variant"]


def arrow_type(kind):
    return {
        "bool": pa.bool_(), "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(),
        "int64": pa.int64(), "float": pa.float32(), "double": pa.float64(),
        "dec5_2": pa.decimal128(5, 2), "dec18_3": pa.decimal128(18, 3),
        "dec38_10": pa.decimal128(38, 10), "date": pa.date32(),
        "ts_utc": pa.timestamp("us", "UTC"), "ts_ntz": pa.timestamp("us"),
        "ts_ms": pa.timestamp("ms", "UTC"), "string": pa.string(),
        "large_string": pa.large_string(), "string_view": pa.string_view(),
        "binary": pa.binary(), "fixed5": pa.binary(5),
        "list_int": pa.list_(pa.int32()),
        "large_list_str": pa.large_list(pa.string()),
        "struct_deep": pa.struct([("a", pa.int64()),
                                  ("b", pa.struct([("c", pa.string()),
                                                   ("d", pa.list_(pa.float64()))]))]),
        "map_str_long": pa.map_(pa.string(), pa.int64()),
        "list_struct": pa.list_(pa.struct([("x", pa.int32()), ("y", pa.list_(pa.string()))])),
        "map_int_list": pa.map_(pa.int32(), pa.list_(pa.int64())),
        "variant": pa.struct([pa.field("metadata", pa.binary(), False),
                              pa.field("value", pa.binary(), False)]),
    }[kind]


def _string(r, long_strings):
    n = r.choice([0, 1, 3, 8, 20, 40]) if not long_strings else r.choice([0, 5, 40, 200, 3000])
    alphabet = "abcxyzAB ÿé€😀\u007f"
    if r.random() < 0.3:
        return "".join(r.choice("ab") for _ in range(n))  # many repeats: dictionary-friendly
    return "".join(r.choice(alphabet) for _ in range(n))


def _value(r, kind, long_strings):
    if kind == "bool":
        return r.random() < 0.5
    if kind in ("int8", "int16", "int32", "int64"):
        bits = int(kind[3:])
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        return r.choice([lo, hi, 0, -1, 1, r.randint(lo, hi), r.randint(-100, 100)])
    if kind in ("float", "double"):
        v = r.choice([0.0, -0.0, 1.5, -2.25, float("inf"), float("-inf"), float("nan"),
                      r.uniform(-1e6, 1e6), r.uniform(-1, 1) * 1e-30])
        if kind == "float" and not math.isnan(v):
            v = struct.unpack("f", struct.pack("f", v))[0]
        return v
    if kind.startswith("dec"):
        p, s = map(int, kind[3:].split("_"))
        u = r.choice([0, 1, -1, 10 ** p - 1, -(10 ** p - 1), r.randint(-(10 ** p - 1), 10 ** p - 1)])
        return decimal.Decimal(u).scaleb(-s, decimal.Context(prec=60))
    if kind == "date":
        return datetime.date(1970, 1, 1) + datetime.timedelta(days=r.randint(-200000, 200000))
    if kind.startswith("ts"):
        us = r.choice([0, -1, 1, r.randint(-(10 ** 16), 10 ** 16), r.randint(0, 10 ** 13) * 1000 + 999])
        if kind == "ts_ms":
            us = us // 1000 * 1000
        dt = datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=us)
        return dt.replace(tzinfo=UTC) if kind != "ts_ntz" else dt
    if kind in ("string", "large_string", "string_view"):
        return _string(r, long_strings)
    if kind == "binary":
        return bytes(r.randint(0, 255) for _ in range(r.choice([0, 1, 7, 33])))
    if kind == "fixed5":
        return bytes(r.randint(0, 255) for _ in range(5))
    raise KeyError(kind)


def _nested_value(r, kind, p_null):
    def maybe(v):
        return None if r.random() < p_null else v

    def lst(fn):
        return [fn() for _ in range(r.choice([0, 0, 1, 2, 5]))]

    if kind == "list_int":
        return lst(lambda: maybe(_value(r, "int32", False)))
    if kind == "large_list_str":
        return lst(lambda: maybe(_value(r, "string", False)))
    if kind == "struct_deep":
        return {"a": maybe(_value(r, "int64", False)),
                "b": maybe({"c": maybe(_value(r, "string", False)),
                            "d": maybe(lst(lambda: maybe(_value(r, "double", False))))})}
    if kind == "map_str_long":
        keys = sorted({_value(r, "string", False) for _ in range(r.choice([0, 1, 3]))})
        return [(k, maybe(_value(r, "int64", False))) for k in keys]
    if kind == "list_struct":
        return lst(lambda: maybe({"x": maybe(_value(r, "int32", False)),
                                  "y": maybe(lst(lambda: maybe(_value(r, "string", False))))}))
    if kind == "map_int_list":
        keys = sorted({r.randint(-5, 5) for _ in range(r.choice([0, 1, 3]))})
        return [(k, maybe(lst(lambda: maybe(r.randint(-9, 9))))) for k in keys]
    if kind == "variant":  # a Delta variant: binary metadata + value (here: a short string)
        s = _value(r, "string", False).encode()[:60]
        return {"metadata": b"\x01\x00\x00", "value": bytes([(len(s) << 2) | 1]) + s}
    raise KeyError(kind)


def column(r, kind, rows, null_mode, long_strings=False):
    p_null = {"none": 0.0, "some": 0.2, "all": 1.0}[null_mode]
    t = arrow_type(kind)
    vals = []
    for _ in range(rows):
        if r.random() < p_null:
            vals.append(None)
        elif kind in NESTED:
            vals.append(_nested_value(r, kind, 0.15 if null_mode != "none" else 0.0))
        else:
            vals.append(_value(r, kind, long_strings))
    if kind == "string_view":
        return pa.array(vals, pa.string()).cast(pa.string_view())
    return pa.array(vals, t)


def random_table(seed, rows=None, kinds=None, null_mode=None):
    r = random.Random(seed)
    if rows is None:
        rows = r.choice([0, 1, 7, 100, 1000, 5000])
    if kinds is None:
        kinds = r.sample(FLAT, r.randint(2, 6)) + r.sample(NESTED, r.randint(0, 3))
    cols, fields = [], []
    for i, k in enumerate(kinds):
        nm = null_mode or r.choice(["none", "some", "some", "all"])
        arr = column(r, k, rows, nm, long_strings=r.random() < 0.2)
        nullable = True
        if nm == "none" and k in FLAT and r.random() < 0.5:
            nullable = False
        md = {b"PARQUET:field_id": str(100 + i).encode()} if r.random() < 0.5 else None
        if k == "variant":
            md = dict(md or {})
            md[b"ARROW:extension:name"] = b"parquet.variant"
        fields.append(pa.field(f"c{i}_{k}", arr.type, nullable, metadata=md))
        cols.append(arr)
    return pa.Table.from_arrays(cols, schema=pa.schema(fields)), {"kinds": kinds, "rows": rows}


def random_params(seed):
    r = random.Random(seed * 7919 + 1)
    p = {"compression": r.choice(["snappy", "zstd", "gzip", "lz4_raw", "none"]),
         "dictionary": r.random() < 0.7,
         "data_page_version": r.choice(["1.0", "2.0"])}
    if r.random() < 0.6:
        p["page_rows"] = r.choice([1, 3, 50, 500])
    if r.random() < 0.3:
        p["page_bytes"] = r.choice([64, 1000, 8000])
    if r.random() < 0.5:
        p["row_group_size"] = r.choice([1, 10, 333, 2000])
    if r.random() < 0.3:
        p["dictionary_bytes"] = r.choice([16, 200, 4000])
    if r.random() < 0.3:
        p["threads"] = 2
    return p


def same_value(a, b):
    """Equality with NaN == NaN and the sign of zero respected."""
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    return a == b


def first_diff(exp, got):
    for i, (a, b) in enumerate(zip(exp, got)):
        if not same_value(a, b):
            return i, a, b
    if len(exp) != len(got):
        return min(len(exp), len(got)), f"len {len(exp)}", f"len {len(got)}"
    return None
