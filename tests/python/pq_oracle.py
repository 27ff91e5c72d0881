"""Shared helpers for the Parquet oracle tests: run `dk parquet cat` and convert pyarrow's
values to the JSON-lines encoding of dk's row printer (tools/cli/print.h), then compare value
by value. pyarrow is the oracle: every expected value comes from pyarrow's own read."""
import base64
import datetime
import decimal
import json
import math
import os
import subprocess

import struct
import pyarrow as pa

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("DK_BUILD", "build")
DK = os.path.join(ROOT, BUILD, "dk") if not os.path.isabs(BUILD) else os.path.join(BUILD, "dk")


def run_dk(*args, timeout=60):
    return subprocess.run([DK, *args], capture_output=True, timeout=timeout)


def dk_rows(path, *extra):
    r = run_dk("parquet", "cat", str(path), "--format", "jsonl", *extra)
    assert r.returncode == 0, f"dk failed ({r.returncode}): {r.stderr.decode(errors='replace')}"
    return [json.loads(line) for line in r.stdout.decode().splitlines()]


def _f32(x):
    return struct.unpack('f', struct.pack('f', x))[0]


class F32:
    """Marks a float32 expected value (dk prints float32 shortest round-trip)."""

    def __init__(self, v):
        self.v = v

    def __repr__(self):
        return f"F32({self.v!r})"


def _ts_text(v, unit, tz):
    per = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}[unit]
    secs, frac = divmod(int(v), per)
    days, sod = divmod(secs, 86400)
    d = datetime.date.fromordinal(719163 + days).isoformat()
    t = _time_text(sod * per + frac, unit)
    return f"{d}T{t}" + ("Z" if tz else "")


def _time_text(v, unit):
    per = {"s": 1, "ms": 1000, "us": 1_000_000, "ns": 1_000_000_000}[unit]
    secs, frac = divmod(int(v), per)
    h, m, s = secs // 3600, secs // 60 % 60, secs % 60
    if unit == "ns":
        return f"{h:02d}:{m:02d}:{s:02d}.{frac:09d}"
    return f"{h:02d}:{m:02d}:{s:02d}.{frac * (1_000_000 // per):06d}"


def expected_column(arr, typ, force_utc=False):
    """pyarrow array -> list of expected JSON values (recursive over nested types)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = pa.concat_arrays(arr.chunks) if arr.num_chunks else pa.array([], typ)
    if isinstance(typ, pa.BaseExtensionType):
        arr = arr.storage if hasattr(arr, "storage") else arr
        typ = typ.storage_type
    valid = [v.is_valid for v in arr] if len(arr) else []
    if pa.types.is_timestamp(typ):
        ints = arr.cast(pa.int64()).to_pylist()
        return [None if x is None else _ts_text(x, typ.unit, typ.tz or force_utc) for x in ints]
    if pa.types.is_time(typ):
        ints = arr.cast(pa.int64() if pa.types.is_time64(typ) else pa.int32()).to_pylist()
        return [None if x is None else _time_text(x, typ.unit) for x in ints]
    if pa.types.is_date32(typ):
        return [None if x is None else x.isoformat() for x in arr.to_pylist()]
    if pa.types.is_decimal(typ):
        return [None if x is None else format(x, "f") for x in arr.to_pylist()]
    if pa.types.is_binary(typ) or pa.types.is_fixed_size_binary(typ) or pa.types.is_large_binary(typ):
        return [None if x is None else base64.b64encode(x).decode() for x in arr.to_pylist()]
    if pa.types.is_float32(typ) or pa.types.is_float16(typ):
        return [None if x is None else F32(float(x)) for x in arr.to_pylist()]
    if pa.types.is_struct(typ):
        kids = [expected_column(arr.field(i), typ.field(i).type, force_utc) for i in range(typ.num_fields)]
        names = [typ.field(i).name for i in range(typ.num_fields)]
        return [None if not valid[r] else {n: k[r] for n, k in zip(names, kids)} for r in range(len(arr))]
    if pa.types.is_map(typ):
        keys = expected_column(arr.keys, typ.key_type, force_utc)
        items = expected_column(arr.items, typ.item_type, force_utc)
        offs = arr.offsets.to_pylist()
        out = []
        for r in range(len(arr)):
            if not valid[r]:
                out.append(None)
                continue
            pairs = [(keys[k], items[k]) for k in range(offs[r], offs[r + 1])]
            out.append({k: v for k, v in pairs} if pa.types.is_string(typ.key_type) else [[k, v] for k, v in pairs])
        return out
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        vals = expected_column(arr.values, typ.value_type, force_utc)
        offs = arr.offsets.to_pylist()
        return [None if not valid[r] else vals[offs[r]:offs[r + 1]] for r in range(len(arr))]
    if pa.types.is_dictionary(typ):
        return expected_column(arr.cast(typ.value_type), typ.value_type, force_utc)
    return arr.to_pylist()


def expected_rows(table, utc_columns=()):
    cols = {}
    for f in table.schema:
        cols[f.name] = expected_column(table.column(f.name), f.type, f.name in utc_columns)
    return [{n: cols[n][r] for n in cols} for r in range(table.num_rows)]


_NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def same(exp, got, where="row"):
    """Value-by-value comparison; returns None or a description of the first difference.
    dk's JSON lines print non-finite floats as the strings "NaN"/"Infinity"/"-Infinity"."""
    if isinstance(exp, (F32, float)) and isinstance(got, str) and got in _NONFINITE:
        got = _NONFINITE[got]
    if isinstance(exp, F32):
        if got is None or isinstance(got, (list, dict, str)):
            return f"{where}: expected float32 {exp.v!r}, got {got!r}"
        if math.isnan(exp.v):
            return None if isinstance(got, float) and math.isnan(got) else f"{where}: expected NaN, got {got!r}"
        return None if _f32(got) == _f32(exp.v) else f"{where}: {exp.v!r} != {got!r}"
    if isinstance(exp, float):
        if not isinstance(got, (int, float)) or isinstance(got, bool):
            return f"{where}: expected {exp!r}, got {got!r}"
        if math.isnan(exp):
            return None if math.isnan(got) else f"{where}: expected NaN, got {got!r}"
        return None if float(got) == exp else f"{where}: {exp!r} != {got!r}"
    if isinstance(exp, dict):
        if not isinstance(got, dict) or list(exp.keys()) != list(got.keys()):
            return f"{where}: expected {exp!r}, got {got!r}"
        for k in exp:
            d = same(exp[k], got[k], f"{where}.{k}")
            if d:
                return d
        return None
    if isinstance(exp, list):
        if not isinstance(got, list) or len(exp) != len(got):
            return f"{where}: expected {exp!r}, got {got!r}"
        for i, (e, g) in enumerate(zip(exp, got)):
            d = same(e, g, f"{where}[{i}]")
            if d:
                return d
        return None
    if isinstance(exp, bool) or isinstance(got, bool):
        return None if exp is got else f"{where}: {exp!r} != {got!r}"
    return None if exp == got else f"{where}: {exp!r} != {got!r}"


def compare_rows(expected, got):
    assert len(expected) == len(got), f"row count {len(expected)} != {len(got)}"
    for i, (e, g) in enumerate(zip(expected, got)):
        d = same(e, g, f"row {i}")
        assert d is None, d
