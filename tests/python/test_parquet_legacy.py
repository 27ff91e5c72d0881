"""Legacy nested layouts pyarrow cannot write but must read (LogicalTypes.md backward
compatibility rules): 2-level lists with a repeated primitive, 2-level lists of `<name>_tuple`
groups, and bare repeated fields. The file is assembled here byte by byte (Thrift compact
footer, v1 data pages, RLE levels); pyarrow's read of it is the oracle."""
import struct

import pyarrow.parquet as pq

from pq_oracle import compare_rows, dk_rows, expected_rows

# ---- a minimal Thrift compact writer --------------------------------------------------------
I32, I64, BINARY, LIST, STRUCT = 5, 6, 8, 9, 12


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def zz(n):
    return varint((n << 1) ^ (n >> 63))


def tstruct(fields):
    """fields: list of (id, type, value) in increasing id order."""
    out, last = bytearray(), 0
    for fid, ftype, val in fields:
        d = fid - last
        out += bytes([(d << 4) | ftype]) if 0 < d <= 15 else bytes([ftype]) + zz(fid)
        last = fid
        out += tvalue(ftype, val)
    return bytes(out + b"\x00")


def tvalue(ftype, val):
    if ftype in (I32, I64):
        return zz(val)
    if ftype == BINARY:
        v = val.encode() if isinstance(val, str) else val
        return varint(len(v)) + v
    if ftype == STRUCT:
        return val  # already encoded
    if ftype == LIST:
        etype, items = val
        head = bytes([(len(items) << 4) | etype]) if len(items) < 15 else bytes([0xF0 | etype]) + varint(len(items))
        return head + b"".join(tvalue(etype, x) for x in items)
    raise ValueError(ftype)


def rle_bitpacked(levels, bit_width):
    """RLE/bit-packed hybrid with a single bit-packed run, 4-byte length prefix."""
    vals = list(levels) + [0] * (-len(levels) % 8)
    bits = 0
    for i, v in enumerate(vals):
        bits |= v << (i * bit_width)
    body = varint(((len(vals) // 8) << 1) | 1) + bits.to_bytes(len(vals) * bit_width // 8, "little")
    return struct.pack("<I", len(body)) + body


def bitpacked_msb(levels, bit_width):
    """Deprecated BIT_PACKED levels: MSB-first, no header."""
    bits = "".join(format(v, f"0{bit_width}b") for v in levels)
    bits += "0" * (-len(bits) % 8)
    return bytes(int(bits[i:i + 8], 2) for i in range(0, len(bits), 8))


def plain(ptype, values):
    if ptype == 1:
        return b"".join(struct.pack("<i", v) for v in values)
    return b"".join(struct.pack("<I", len(v.encode())) + v.encode() for v in values)


def write_file(path, columns, schema, num_rows, level_encoding=3):
    """columns: list of (path list, physical type, max_rep, max_def, reps, defs, values)."""
    body = bytearray(b"PAR1")
    chunks = []
    for cpath, ptype, max_rep, max_def, reps, defs, values in columns:
        data = b""
        enc = rle_bitpacked if level_encoding == 3 else bitpacked_msb
        if max_rep:
            data += enc(reps, max(1, max_rep.bit_length()))
        if max_def:
            data += enc(defs, max(1, max_def.bit_length()))
        data += plain(ptype, values)
        dph = tstruct([(1, I32, len(defs)), (2, I32, 0), (3, I32, level_encoding), (4, I32, level_encoding)])
        header = tstruct([(1, I32, 0), (2, I32, len(data)), (3, I32, len(data)), (5, STRUCT, dph)])
        off = len(body)
        body += header + data
        size = len(header) + len(data)
        cmd = tstruct([(1, I32, ptype), (2, LIST, (I32, [0, 3])), (3, LIST, (BINARY, cpath)), (4, I32, 0),
                       (5, I64, len(defs)), (6, I64, size), (7, I64, size), (9, I64, off)])
        chunks.append(tstruct([(2, I64, off), (3, STRUCT, cmd)]))
    rg = tstruct([(1, LIST, (STRUCT, chunks)), (2, I64, len(body)), (3, I64, num_rows)])
    els = []
    for e in schema:
        f = []
        if "type" in e:
            f.append((1, I32, e["type"]))
        if "rep" in e:
            f.append((3, I32, e["rep"]))
        f.append((4, BINARY, e["name"]))
        if "children" in e:
            f.append((5, I32, e["children"]))
        if "converted" in e:
            f.append((6, I32, e["converted"]))
        els.append(tstruct(f))
    footer = tstruct([(1, I32, 1), (2, LIST, (STRUCT, els)), (3, I64, num_rows), (4, LIST, (STRUCT, [rg]))])
    body += footer + struct.pack("<I", len(footer)) + b"PAR1"
    path.write_bytes(bytes(body))


REQ, OPT, REP = 0, 1, 2
UTF8, LISTCT = 0, 3


def test_legacy_lists(tmp_path):
    schema = [
        {"name": "schema", "children": 3},
        # a: optional group (LIST) { repeated int32 array; }                       2-level
        {"name": "a", "rep": OPT, "children": 1, "converted": LISTCT},
        {"name": "array", "rep": REP, "type": 1},
        # b: optional group (LIST) { repeated group b_tuple { required int32 x; optional binary y (UTF8); } }
        {"name": "b", "rep": OPT, "children": 1, "converted": LISTCT},
        {"name": "b_tuple", "rep": REP, "children": 2},
        {"name": "x", "rep": REQ, "type": 1},
        {"name": "y", "rep": OPT, "type": 6, "converted": UTF8},
        # r: repeated int32 (no annotation): a required list of required ints
        {"name": "r", "rep": REP, "type": 1},
    ]
    # rows: a = [1,2], None, [], [3]; b = [{1,"p"},{2,None}], None, [], [{3,"q"}]; r = [5,6], [], [7], []
    columns = [
        (["a", "array"], 1, 1, 2, [0, 1, 0, 0, 0], [2, 2, 0, 1, 2], [1, 2, 3]),
        (["b", "b_tuple", "x"], 1, 1, 2, [0, 1, 0, 0, 0], [2, 2, 0, 1, 2], [1, 2, 3]),
        (["b", "b_tuple", "y"], 6, 1, 3, [0, 1, 0, 0, 0], [3, 2, 0, 1, 3], ["p", "q"]),
        (["r"], 1, 1, 1, [0, 1, 0, 0, 0], [1, 1, 0, 1, 0], [5, 6, 7]),
    ]
    path = tmp_path / "legacy.parquet"
    write_file(path, columns, schema, 4)
    t = pq.read_table(path)
    exp = expected_rows(t)
    assert exp[0]["a"] == [1, 2] and exp[1]["b"] is None and exp[2]["r"] == [7]  # pyarrow agrees with the intent
    compare_rows(exp, dk_rows(path))
    compare_rows(exp, dk_rows(path, "--batch-size", "1"))


def test_deprecated_bit_packed_levels(tmp_path):
    """Old writers' BIT_PACKED (MSB-first) definition levels, over more than one 4096-level
    decoding chunk."""
    n = 9000
    schema = [{"name": "schema", "children": 1}, {"name": "v", "rep": OPT, "type": 1}]
    defs = [0 if i % 5 == 0 else 1 for i in range(n)]
    vals = [i for i in range(n) if i % 5]
    path = tmp_path / "bp.parquet"
    write_file(path, [(["v"], 1, 0, 1, [], defs, vals)], schema, n, level_encoding=4)
    # The oracle is the encoding itself (Encodings.md: BIT_PACKED packs from the most
    # significant bit, as parquet-mr writes it). pyarrow is no oracle here: Arrow C++ reads
    # BIT_PACKED levels LSB-first.
    exp = [{"v": None if i % 5 == 0 else i} for i in range(n)]
    compare_rows(exp, dk_rows(path))
    compare_rows(exp, dk_rows(path, "--batch-size", "4097"))
