"""Independent Variant decoder of the test kit (no dk code involved).

Follows apache/parquet-format ``VariantEncoding.md``: a ``metadata`` binary (header byte with
version 1, sorted_strings and offset_size_minus_one; dictionary_size; dictionary_size + 1
offsets; the UTF-8 key bytes) and a self-describing ``value`` binary (one value_metadata byte:
basic_type in bits 0-1 — primitive, short string, object, array — and a 6-bit value_header).

``decode(metadata, value)`` returns the value in the JSON encoding of the corpus' expected rows.
Those rows come from Spark (``Variant.toJson``) parsed as JSON, so the mapping follows Spark:
numbers stay JSON numbers (decimals as their plain decimal text, hence int or float once parsed;
float as its shortest float32 text), dates ``"YYYY-MM-DD"``, timestamps
``"YYYY-MM-DD HH:MM:SS[.fraction]"`` (fraction with trailing zeros dropped; ``+00:00`` appended
for the UTC-adjusted kinds), times ``"HH:MM:SS[.fraction]"``, binary as base64 text, UUIDs in
their canonical lowercase text. Malformed bytes raise ``VariantError`` naming the byte offset.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import math
import struct
import uuid
from typing import Any


class VariantError(ValueError):
    pass


_EPOCH = datetime.date(1970, 1, 1)

# fixed value_data sizes of the primitive type ids (None: length-prefixed)
_PRIM_SIZE = {0: 0, 1: 0, 2: 0, 3: 1, 4: 2, 5: 4, 6: 8, 7: 8, 8: 5, 9: 9, 10: 17, 11: 4,
              12: 8, 13: 8, 14: 4, 15: None, 16: None, 17: 8, 18: 8, 19: 8, 20: 16}


def _uint(buf: bytes, at: int, n: int, what: str) -> int:
    if at < 0 or at + n > len(buf):
        raise VariantError(f"{what}: {n} byte(s) at offset {at} run past the end ({len(buf)})")
    return int.from_bytes(buf[at:at + n], "little", signed=False)


def _sint(buf: bytes, at: int, n: int, what: str) -> int:
    if at + n > len(buf):
        raise VariantError(f"{what}: {n} byte(s) at offset {at} run past the end ({len(buf)})")
    return int.from_bytes(buf[at:at + n], "little", signed=True)


def metadata_keys(metadata: bytes) -> list[str]:
    """The metadata dictionary (list of keys, by field id)."""
    m = bytes(metadata)
    hdr = _uint(m, 0, 1, "metadata header")
    if hdr & 0x0F != 1:
        raise VariantError(f"metadata: unsupported version {hdr & 0x0F} at offset 0")
    osz = (hdr >> 6) + 1
    n = _uint(m, 1, osz, "metadata dictionary_size")
    offs_at = 1 + osz
    if offs_at + (n + 1) * osz > len(m):
        raise VariantError(f"metadata: {n + 1} offsets at offset {offs_at} exceed {len(m)} bytes")
    offs = [_uint(m, offs_at + i * osz, osz, "metadata offset") for i in range(n + 1)]
    base = offs_at + (n + 1) * osz
    keys = []
    for i in range(n):
        a, b = offs[i], offs[i + 1]
        if not a <= b <= len(m) - base:
            raise VariantError(f"metadata: key {i} bytes [{a}, {b}) outside the dictionary "
                               f"(offset {offs_at + i * osz})")
        keys.append(m[base + a:base + b].decode("utf-8"))
    return keys


def _frac(units: int, digits: int) -> str:
    """``.ffffff`` with trailing zeros dropped; empty for zero."""
    if units == 0:
        return ""
    return "." + f"{units:0{digits}d}".rstrip("0")


def _ts_text(v: int, per_sec: int, digits: int, utc: bool) -> str:
    secs, sub = divmod(v, per_sec)
    days, sod = divmod(secs, 86400)
    d = _EPOCH + datetime.timedelta(days=days)
    hh, rem = divmod(sod, 3600)
    mm, ss = divmod(rem, 60)
    text = f"{d.isoformat()} {hh:02d}:{mm:02d}:{ss:02d}{_frac(sub, digits)}"
    return text + ("+00:00" if utc else "")


def _float32_text(x: float) -> str:
    if math.isnan(x) or math.isinf(x):
        return repr(x)
    for d in range(1, 10):
        s = f"{x:.{d}g}"
        if struct.unpack("<f", struct.pack("<f", float(s)))[0] == x:
            return s
    return repr(x)


def _decimal_text(unscaled: int, scale: int) -> str:
    if not 0 <= scale <= 38:
        raise VariantError(f"decimal scale {scale} outside [0, 38]")
    sign = "-" if unscaled < 0 else ""
    digits = str(abs(unscaled))
    if scale == 0:
        return sign + digits
    digits = digits.rjust(scale + 1, "0")
    return f"{sign}{digits[:-scale]}.{digits[-scale:]}"


def _primitive(v: bytes, at: int, tid: int, exact: bool) -> Any:
    if tid not in _PRIM_SIZE:
        raise VariantError(f"value: unknown primitive type id {tid} at offset {at}")
    p = at + 1
    size = _PRIM_SIZE[tid]
    if size is not None and p + size > len(v):
        raise VariantError(f"value: primitive type {tid} at offset {at} needs {size} bytes, "
                           f"{len(v) - p} present")
    if tid == 0:
        return None
    if tid in (1, 2):
        return tid == 1
    if tid in (3, 4, 5, 6):
        return _sint(v, p, {3: 1, 4: 2, 5: 4, 6: 8}[tid], "int")
    if tid == 7:
        x = struct.unpack_from("<d", v, p)[0]
        return x
    if tid in (8, 9, 10):
        scale = v[p]
        unscaled = _sint(v, p + 1, {8: 4, 9: 8, 10: 16}[tid], "decimal")
        text = _decimal_text(unscaled, scale)
        return decimal.Decimal(text) if exact else json.loads(text)
    if tid == 11:
        return (_EPOCH + datetime.timedelta(days=_sint(v, p, 4, "date"))).isoformat()
    if tid in (12, 13):
        return _ts_text(_sint(v, p, 8, "timestamp"), 1_000_000, 6, tid == 12)
    if tid in (18, 19):
        return _ts_text(_sint(v, p, 8, "timestamp"), 1_000_000_000, 9, tid == 18)
    if tid == 14:
        return float(_float32_text(struct.unpack_from("<f", v, p)[0]))
    if tid in (15, 16):
        n = _uint(v, p, 4, "length")
        if p + 4 + n > len(v):
            raise VariantError(f"value: {n} bytes at offset {p + 4} run past the end ({len(v)})")
        raw = v[p + 4:p + 4 + n]
        return base64.b64encode(raw).decode("ascii") if tid == 15 else raw.decode("utf-8")
    if tid == 17:
        us = _sint(v, p, 8, "time")
        secs, sub = divmod(us, 1_000_000)
        hh, rem = divmod(secs, 3600)
        mm, ss = divmod(rem, 60)
        return f"{hh:02d}:{mm:02d}:{ss:02d}{_frac(sub, 6)}"
    return str(uuid.UUID(bytes=bytes(v[p:p + 16])))  # 20: big-endian


def _value(keys: list[str], v: bytes, at: int, end: int, depth: int, exact: bool) -> Any:
    if depth > 200:
        raise VariantError(f"value: nested too deeply at offset {at}")
    if at >= end:
        raise VariantError(f"value: empty value at offset {at}")
    first = v[at]
    basic, hdr = first & 3, first >> 2
    if basic == 0:
        return _primitive(v[:end], at, hdr, exact)
    if basic == 1:
        if at + 1 + hdr > end:
            raise VariantError(f"value: short string of {hdr} bytes at offset {at} runs past "
                               f"the end ({end})")
        return v[at + 1:at + 1 + hdr].decode("utf-8")
    osz = (hdr & 3) + 1
    if basic == 2:
        isz, large = ((hdr >> 2) & 3) + 1, (hdr >> 4) & 1
    else:
        isz, large = 0, (hdr >> 2) & 1
    p = at + 1
    nsz = 4 if large else 1
    n = _uint(v[:end], p, nsz, "num_elements")
    p += nsz
    if p + n * isz + (n + 1) * osz > end:
        raise VariantError(f"value: {n} elements at offset {at} need more than the {end - at} "
                           "bytes present")
    ids = [_uint(v, p + i * isz, isz, "field_id") for i in range(n)] if basic == 2 else []
    p += n * isz
    offs = [_uint(v, p + i * osz, osz, "field_offset") for i in range(n + 1)]
    data = p + (n + 1) * osz
    dend = data + offs[n]
    if dend > end:
        raise VariantError(f"value: fields of the container at offset {at} end at {dend}, past "
                           f"{end}")
    items = []
    for i in range(n):
        o = offs[i]
        if o >= offs[n]:
            raise VariantError(f"value: element {i} offset {o} outside the fields "
                               f"(container at offset {at})")
        items.append(_value(keys, v, data + o, dend, depth + 1, exact))
    if basic == 3:
        return items
    out = {}
    for i, fid in enumerate(ids):
        if fid >= len(keys):
            raise VariantError(f"value: field id {fid} at offset {at} is not in the dictionary "
                               f"({len(keys)} keys)")
        if keys[fid] in out:
            raise VariantError(f"value: duplicate field {keys[fid]!r} in object at offset {at}")
        out[keys[fid]] = items[i]
    return out


def decode(metadata: bytes, value: bytes, exact_decimals: bool = False) -> Any:
    """(metadata, value) Variant bytes -> the expected rows' JSON value.

    ``exact_decimals``: decimals as ``decimal.Decimal`` instead of the int/float that parsing
    their JSON text gives."""
    v = bytes(value)
    return _value(metadata_keys(metadata), v, 0, len(v), 0, exact_decimals)


def decode_tree(x: Any, t: tuple) -> Any:
    """Replaces every Variant in ``x`` (a row value of logical type ``t``, as dkharness'
    canon_arrow leaves it: a ``{"metadata": bytes, "value": bytes}`` dict) by its JSON value."""
    if x is None:
        return None
    kind = t[0]
    if kind == "variant":
        return decode(x["metadata"], x["value"])
    if kind == "struct":
        return {n: decode_tree(x[n], ft) for n, ft in t[1]}
    if kind == "array":
        return [decode_tree(e, t[1]) for e in x]
    if kind == "map":
        return [[k, decode_tree(e, t[2])] for k, e in x]
    return x
