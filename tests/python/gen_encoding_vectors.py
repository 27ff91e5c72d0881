#!/usr/bin/env python3
"""Generates tests/unit/test_pq_encoding_vectors.h: Parquet page payloads written by pyarrow
(and DuckDB, a second writer) together with the values they were given, for the encoding unit tests.

Each vector is one page of one single-column file that pyarrow wrote with a forced encoding
(no compression unless the vector is about a codec). This script finds the page with
pyarrow's own column-chunk metadata (data_page_offset / dictionary_page_offset) and a tiny
compact-Thrift reader for the page header, and cuts out the page payload. The expected
values are taken from the input arrays, never from our decoder.

Usage: .venv/bin/python tests/python/gen_encoding_vectors.py > tests/unit/test_pq_encoding_vectors.h
"""
import io
import random
import struct
import sys

import pyarrow as pa
import pyarrow.parquet as pq

# ---- compact thrift (just enough to read a PageHeader) ------------------------------------


class Reader:
    def __init__(self, buf, pos=0):
        self.b = buf
        self.p = pos

    def byte(self):
        v = self.b[self.p]
        self.p += 1
        return v

    def varint(self):
        v = shift = 0
        while True:
            c = self.byte()
            v |= (c & 0x7F) << shift
            shift += 7
            if not c & 0x80:
                return v

    def zigzag(self):
        v = self.varint()
        return (v >> 1) ^ -(v & 1)

    def value(self, t):
        if t in (1, 2):  # bool true / false
            return t == 1
        if t == 3:
            return self.byte()
        if t in (4, 5, 6):
            return self.zigzag()
        if t == 7:
            v = self.b[self.p:self.p + 8]
            self.p += 8
            return v
        if t == 8:
            n = self.varint()
            v = self.b[self.p:self.p + n]
            self.p += n
            return v
        if t in (9, 10):
            h = self.byte()
            n = h >> 4
            et = h & 0x0F
            if n == 15:
                n = self.varint()
            return [self.value(et) for _ in range(n)]
        if t == 12:
            return self.struct()
        raise ValueError("thrift type %d" % t)

    def struct(self):
        out = {}
        fid = 0
        while True:
            h = self.byte()
            if h == 0:
                return out
            t = h & 0x0F
            d = h >> 4
            fid = fid + d if d else self.zigzag()
            out[fid] = self.value(t)


def page_at(buf, off):
    """Returns (header dict, payload bytes) of the page at off."""
    r = Reader(buf, off)
    h = r.struct()
    size = h[3]
    return h, bytes(buf[r.p:r.p + size])


def write(table, **kw):
    sink = io.BytesIO()
    opts = dict(compression="NONE", use_dictionary=False, data_page_size=1 << 30,
                write_statistics=False)
    opts.update(kw)
    pq.write_table(table, sink, **opts)
    buf = sink.getvalue()
    md = pq.ParquetFile(io.BytesIO(buf)).metadata.row_group(0).column(0)
    return buf, md


def data_page(table, **kw):
    buf, md = write(table, **kw)
    h, payload = page_at(buf, md.data_page_offset)
    assert h[1] in (0, 3), h  # DATA_PAGE or DATA_PAGE_V2
    return h, payload, buf, md


# ---- vectors -------------------------------------------------------------------------------

VECTORS = []  # (name, kind, param, n, enc, exp, aux)


def add(name, kind, param, n, enc, exp=b"", aux=b""):
    VECTORS.append((name, kind, param, n, bytes(enc), bytes(exp), bytes(aux)))


def req(name, arr):
    return pa.table({"x": arr}, schema=pa.schema([pa.field("x", arr.type, nullable=False)]))


def i32(vals):
    return struct.pack("<%di" % len(vals), *vals)


def i64(vals):
    return struct.pack("<%dq" % len(vals), *vals)


def offsets_and_data(vals):
    offs = [0]
    data = b""
    for v in vals:
        data += v
        offs.append(len(data))
    return data, i32(offs)


def main():
    rnd = random.Random(20261129)

    # DELTA_BINARY_PACKED
    def dbp(name, typ, vals, kind, packer):
        h, payload, _, _ = data_page(req("x", pa.array(vals, typ)),
                                     column_encoding={"x": "DELTA_BINARY_PACKED"})
        assert h[5][2] == 5, h  # encoding
        add(name, kind, 0, len(vals), payload, packer(vals))

    I32MIN, I32MAX = -2**31, 2**31 - 1
    I64MIN, I64MAX = -2**63, 2**63 - 1
    dbp("dbp_i32_sorted", pa.int32(), sorted(rnd.randrange(-10**6, 10**6) for _ in range(777)),
        "DBP32", i32)
    dbp("dbp_i32_random", pa.int32(),
        [rnd.choice([I32MIN, I32MAX, 0, -1, 1, rnd.randrange(I32MIN, I32MAX)]) for _ in range(1000)],
        "DBP32", i32)
    dbp("dbp_i32_one", pa.int32(), [-42], "DBP32", i32)
    dbp("dbp_i32_const", pa.int32(), [7] * 300, "DBP32", i32)
    dbp("dbp_i64_random", pa.int64(),
        [rnd.choice([I64MIN, I64MAX, 0, -1, rnd.randrange(I64MIN, I64MAX), rnd.randrange(-1000, 1000)])
         for _ in range(600)], "DBP64", i64)
    dbp("dbp_i64_ramp", pa.int64(), [3 * i + (i % 7) for i in range(129)], "DBP64", i64)

    # DELTA_LENGTH_BYTE_ARRAY / DELTA_BYTE_ARRAY over strings
    words = []
    for i in range(400):
        k = rnd.choice([0, 1, 3, 8, 20, 70])
        words.append("".join(rnd.choice("abcdefgh") for _ in range(k)).encode())
    h, payload, _, _ = data_page(req("x", pa.array(words, pa.binary())),
                                 column_encoding={"x": "DELTA_LENGTH_BYTE_ARRAY"})
    assert h[5][2] == 6, h
    data, offs = offsets_and_data(words)
    add("dlba_binary", "DLBA", 0, len(words), payload, data, offs)

    urls = sorted("https://example.org/%s/%d" % (rnd.choice(["a", "ab", "abc", "zz"]), rnd.randrange(10**5))
                  for _ in range(500))
    urls = [u.encode() for u in urls] + [b"", b"x", b"", b"https://"]
    h, payload, _, _ = data_page(req("x", pa.array(urls, pa.binary())),
                                 column_encoding={"x": "DELTA_BYTE_ARRAY"})
    assert h[5][2] == 7, h
    data, offs = offsets_and_data(urls)
    add("dba_binary", "DBA", 0, len(urls), payload, data, offs)

    fl = [bytes(rnd.choice(b"ab") for _ in range(5)) for _ in range(300)]
    fl.sort()
    h, payload, _, _ = data_page(req("x", pa.array(fl, pa.binary(5))),
                                 column_encoding={"x": "DELTA_BYTE_ARRAY"})
    assert h[5][2] == 7, h
    add("dba_flba5", "DBA_FLBA", 5, len(fl), payload, b"".join(fl))

    # BYTE_STREAM_SPLIT
    def bss(name, arr, width, raw):
        h, payload, _, _ = data_page(req("x", arr), column_encoding={"x": "BYTE_STREAM_SPLIT"})
        assert h[5][2] == 9, h
        add(name, "BSS", width, len(arr), payload, raw)

    f32 = [rnd.uniform(-1e6, 1e6) for _ in range(333)]
    bss("bss_f32", pa.array(f32, pa.float32()), 4, struct.pack("<%df" % len(f32), *f32))
    f64 = [rnd.uniform(-1e300, 1e300) for _ in range(257)]
    bss("bss_f64", pa.array(f64, pa.float64()), 8, struct.pack("<%dd" % len(f64), *f64))
    fb3 = [bytes(rnd.randrange(256) for _ in range(3)) for _ in range(101)]
    bss("bss_flba3", pa.array(fb3, pa.binary(3)), 3, b"".join(fb3))
    fb16 = [bytes(rnd.randrange(256) for _ in range(16)) for _ in range(40)]
    bss("bss_flba16", pa.array(fb16, pa.binary(16)), 16, b"".join(fb16))

    # Dictionary: RLE_DICTIONARY data page (bit width byte + hybrid) with its PLAIN dictionary
    vals = [rnd.choice([10, 20, 30, -5, 2**40, 77, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12]) for _ in range(1000)]
    vals[100:400] = [77] * 300  # a long RLE run
    buf, md = write(req("x", pa.array(vals, pa.int64())), use_dictionary=True)
    dh, dpayload = page_at(buf, md.dictionary_page_offset)
    assert dh[1] == 2, dh
    h, payload = page_at(buf, md.data_page_offset)
    assert h[5][2] in (2, 8), h
    add("dict_i64", "DICT", 8, len(vals), payload, i64(vals), dpayload)

    svals = [rnd.choice([b"alpha", b"", b"beta", b"gamma delta"]) for _ in range(500)]
    buf, md = write(req("x", pa.array(svals, pa.binary())), use_dictionary=True)
    dh, dpayload = page_at(buf, md.dictionary_page_offset)
    h, payload = page_at(buf, md.data_page_offset)
    assert h[5][2] in (2, 8), h
    data, offs = offsets_and_data(svals)
    # aux = dictionary page, exp = the values' bytes; offsets follow the dictionary in aux2
    add("dict_binary", "DICT_BA", dh[7][1], len(svals), payload, data, dpayload + offs)

    # Definition levels of a v1 page (4-byte length + hybrid, bit width 1) and PLAIN values
    nv = [None if rnd.random() < 0.3 else rnd.randrange(-1000, 1000) for _ in range(700)]
    nv[200:300] = [None] * 100
    nv[300:420] = list(range(120))
    t = pa.table({"x": pa.array(nv, pa.int32())})
    h, payload, _, _ = data_page(t)
    assert h[5][3] == 3, h  # definition level encoding RLE
    levels = [0 if v is None else 1 for v in nv]
    present = [v for v in nv if v is not None]
    add("levels_v1_i32", "LEVELS_V1", 1, len(nv), payload, i32(levels), i32(present))

    # v2 page: levels without the length prefix; header field 8 has their byte length
    h, payload, _, _ = data_page(t, data_page_version="2.0")
    assert h[1] == 3, h
    v2 = h[8]
    dl_len = v2[5]
    assert v2.get(6, 0) == 0
    add("levels_v2_i32", "LEVELS_V2", dl_len, len(nv), payload, i32(levels), i32(present))

    # Booleans: PLAIN (bit-packed) and RLE (v2 pages; 4-byte length prefix, bit width 1)
    bools = [rnd.random() < 0.4 for _ in range(613)]
    bools[50:250] = [True] * 200
    h, payload, _, _ = data_page(req("x", pa.array(bools, pa.bool_())))
    assert h[5][2] == 0, h
    add("bool_plain", "BOOL_PLAIN", 0, len(bools), payload, bytes(int(b) for b in bools))
    h, payload, _, _ = data_page(req("x", pa.array(bools, pa.bool_())), data_page_version="2.0",
                                 column_encoding={"x": "RLE"})
    assert h[8][4] == 3, h
    add("bool_rle_v2", "BOOL_RLE", 0, len(bools), payload, bytes(int(b) for b in bools))

    # PLAIN BYTE_ARRAY
    h, payload, _, _ = data_page(req("x", pa.array(words, pa.binary())))
    data, offs = offsets_and_data(words)
    add("plain_binary", "PLAIN_BA", 0, len(words), payload, data, offs)

    # Codecs: the same PLAIN page compressed by pyarrow with each codec
    cvals = [rnd.randrange(0, 50) for _ in range(800)]
    ctab = req("x", pa.array(cvals, pa.int64()))
    for comp in ["snappy", "gzip", "brotli", "zstd", "lz4"]:
        buf, md = write(ctab, compression=comp)
        h, payload = page_at(buf, md.data_page_offset)
        codec = {"SNAPPY": 1, "GZIP": 2, "BROTLI": 4, "LZ4": 5, "ZSTD": 6, "LZ4_RAW": 7}[md.compression]
        assert h[2] == len(cvals) * 8, h
        add("codec_" + md.compression.lower(), "CODEC", codec, h[2], payload, i64(cvals))

    # A second, independent writer: DuckDB picks DELTA_* / BYTE_STREAM_SPLIT itself for
    # PARQUET_VERSION v2 (with its own block sizes); expected values come from DuckDB's query.
    import duckdb
    import os
    import tempfile
    con = duckdb.connect()
    q = ("SELECT (i*i*7919 % 100003 - 40000)::BIGINT AS a, (hash(i) % 2000000000)::INTEGER AS b, "
         "('u' || (i*7)::VARCHAR) AS c, (i*1.5 - 300)::DOUBLE AS d, (i*0.25)::FLOAT AS f "
         "FROM range(1000) t(i) ORDER BY i")
    rows = con.execute(q).fetchall()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "duck.parquet")
        con.execute("COPY (%s) TO '%s' (FORMAT parquet, COMPRESSION uncompressed, "
                    "PARQUET_VERSION v2)" % (q, path))
        dbuf = open(path, "rb").read()
    dmd = pq.ParquetFile(io.BytesIO(dbuf)).metadata.row_group(0)
    for ci, (name, kind, param, want_enc) in enumerate([
            ("duck_dbp_i64", "DBP64", 0, 5), ("duck_dbp_i32", "DBP32", 0, 5),
            ("duck_dlba", "DLBA", 0, 6), ("duck_bss_f64", "BSS", 8, 9), ("duck_bss_f32", "BSS", 4, 9)]):
        h, payload = page_at(dbuf, dmd.column(ci).data_page_offset)
        assert h[1] == 0 and h[5][1] == len(rows) and h[5][2] == want_enc, h
        lev = struct.unpack("<I", payload[:4])[0]  # OPTIONAL column: skip its v1 levels
        payload = payload[4 + lev:]
        col = [r[ci] for r in rows]
        if kind == "DBP64":
            add(name, kind, param, len(col), payload, i64(col))
        elif kind == "DBP32":
            add(name, kind, param, len(col), payload, i32(col))
        elif kind == "DLBA":
            data, offs = offsets_and_data([c.encode() for c in col])
            add(name, kind, param, len(col), payload, data, offs)
        else:
            fmt = "<%dd" if param == 8 else "<%df"
            add(name, kind, param, len(col), payload, struct.pack(fmt % len(col), *col))

    # ---- emit ----
    out = sys.stdout
    out.write("/* Generated by tests/python/gen_encoding_vectors.py with pyarrow %s. Do not edit. */\n"
              % pa.__version__)
    out.write("#ifndef TEST_PQ_ENCODING_VECTORS_H\n#define TEST_PQ_ENCODING_VECTORS_H\n\n")
    out.write("#include <stddef.h>\n#include <stdint.h>\n\n")

    def arr(name, b):
        out.write("static const uint8_t %s[%d] = {" % (name, max(len(b), 1)))
        if not b:
            out.write("0")
        for i, c in enumerate(b):
            if i % 24 == 0:
                out.write("\n ")
            out.write("%d," % c)
        out.write("\n};\n")

    for (name, kind, param, n, enc, exp, aux) in VECTORS:
        arr("pv_%s_enc" % name, enc)
        arr("pv_%s_exp" % name, exp)
        arr("pv_%s_aux" % name, aux)
    out.write("\ntypedef struct pq_vector {\n  const char *name, *kind;\n  int param;\n  int64_t n;\n"
              "  const uint8_t *enc, *exp, *aux;\n  size_t enc_len, exp_len, aux_len;\n} pq_vector;\n\n")
    out.write("static const pq_vector pq_vectors[] = {\n")
    for (name, kind, param, n, enc, exp, aux) in VECTORS:
        out.write('  {"%s", "%s", %d, %d, pv_%s_enc, pv_%s_exp, pv_%s_aux, %d, %d, %d},\n'
                  % (name, kind, param, n, name, name, name, len(enc), len(exp), len(aux)))
    out.write("};\n\n#endif\n")


if __name__ == "__main__":
    main()
