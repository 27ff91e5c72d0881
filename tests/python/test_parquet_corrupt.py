"""Bad input for dk's Parquet reader: truncated files, bit flips, wrong magic, lying lengths
and counts, deep Thrift nesting. Each must end with a clean error (exit code 1, the message
saying "corrupt") whose message names the file — never a crash, a hang or a sanitizer report."""
import random
import struct

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pq_oracle import run_dk

BAD_SIGNS = (b"AddressSanitizer", b"runtime error", b"LeakSanitizer", b"Segmentation")


def _table():
    n = 300
    return pa.table({
        "i": pa.array([i if i % 7 else None for i in range(n)], pa.int64()),
        "s": pa.array([f"v{i % 13}" * (i % 5) for i in range(n)]),
        "d": pa.array([i / 3 for i in range(n)]),
        "l": pa.array([[j for j in range(i % 4)] if i % 5 else None for i in range(n)], pa.list_(pa.int32())),
        "m": pa.array([[(f"k{i}", i)] if i % 3 else [] for i in range(n)], pa.map_(pa.string(), pa.int64())),
        "st": pa.array([{"a": i, "b": str(i)} if i % 4 else None for i in range(n)]),
    })


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("corrupt")
    out = {}
    t = _table()
    for name, kw in {
        "snappy_v1": dict(compression="snappy"),
        "zstd_v2": dict(compression="zstd", data_page_version="2.0"),
        "plain": dict(compression="none", use_dictionary=False, column_encoding={"i": "DELTA_BINARY_PACKED", "s": "DELTA_BYTE_ARRAY"}),
    }.items():
        p = d / f"{name}.parquet"
        pq.write_table(t, p, row_group_size=100, data_page_size=512, **kw)
        out[name] = p.read_bytes()
    return d, out


def _run(path):
    r = run_dk("parquet", "cat", str(path), "--batch-size", "17", timeout=30)
    assert r.returncode >= 0, f"killed by signal {-r.returncode}"
    for sign in BAD_SIGNS:
        assert sign not in r.stderr, r.stderr.decode(errors="replace")[:2000]
    assert r.returncode in (0, 1, 3), r.returncode
    if r.returncode != 0:
        msg = r.stderr.decode(errors="replace")
        assert str(path) in msg, msg
    return r


def _expect_corrupt(path, needle=None):
    r = _run(path)
    msg = r.stderr.decode(errors="replace")
    assert r.returncode == 1 and "corrupt" in msg, msg
    if needle:
        assert needle in msg, msg
    return msg


def test_truncated(files):
    d, data = files
    raw = data["snappy_v1"]
    p = d / "trunc.parquet"
    for cut in sorted(set([0, 3, 4, 8, 11, 12, len(raw) // 2, len(raw) - 9, len(raw) - 5, len(raw) - 1] +
                          list(range(0, len(raw), max(1, len(raw) // 40))))):
        p.write_bytes(raw[:cut])
        _expect_corrupt(p)


def test_wrong_magic(files):
    d, data = files
    p = d / "magic.parquet"
    p.write_bytes(b"PAR2" + data["snappy_v1"][4:])
    assert "offset 0" in _expect_corrupt(p, "magic")
    p.write_bytes(data["snappy_v1"][:-4] + b"PAR0")
    _expect_corrupt(p, "magic")


def test_lying_footer_length(files):
    d, data = files
    raw = data["snappy_v1"]
    p = d / "flen.parquet"
    for flen in (0, 1, len(raw) - 12, len(raw), 0x7FFFFFFF, 0xFFFFFFFF):
        p.write_bytes(raw[:-8] + struct.pack("<I", flen) + b"PAR1")
        _expect_corrupt(p, "offset")


def test_deep_thrift_nesting(tmp_path):
    # FileMetaData whose field 2 is a struct containing a struct containing ... 100000 deep
    footer = bytes([0x1C]) * 100000
    p = tmp_path / "deep.parquet"
    p.write_bytes(b"PAR1" + footer + struct.pack("<I", len(footer)) + b"PAR1")
    _expect_corrupt(p, "deep")
    # a list claiming 2^31 elements in a 10-byte footer
    footer = bytes([0x19, 0xFC, 0xFF, 0xFF, 0xFF, 0xFF, 0x07, 0x00, 0x00, 0x00])
    p.write_bytes(b"PAR1" + footer + struct.pack("<I", len(footer)) + b"PAR1")
    _expect_corrupt(p)


def _pages_region(raw):
    flen = struct.unpack("<I", raw[-8:-4])[0]
    return 4, len(raw) - 8 - flen


@pytest.mark.parametrize("name", ["snappy_v1", "zstd_v2", "plain"])
def test_bit_flips(files, name):
    d, data = files
    raw = data[name]
    rng = random.Random(name)
    p = d / f"flip_{name}.parquet"
    lo, hi = _pages_region(raw)
    for k in range(120):
        b = bytearray(raw)
        # mostly page headers/data, sometimes the footer
        region = (lo, hi) if k % 3 else (hi, len(raw) - 8)
        for _ in range(rng.randint(1, 4)):
            pos = rng.randrange(*region)
            b[pos] ^= 1 << rng.randrange(8) if rng.random() < 0.7 else rng.randrange(1, 256)
        p.write_bytes(bytes(b))
        _run(p)


@pytest.mark.parametrize("name", ["snappy_v1", "plain"])
def test_lying_counts(files, name):
    """Overwrite varints in the footer and page headers with huge values (sizes, counts)."""
    d, data = files
    raw = data[name]
    rng = random.Random(7)
    p = d / f"lie_{name}.parquet"
    for k in range(80):
        b = bytearray(raw)
        pos = rng.randrange(4, len(raw) - 8 - 5)
        b[pos:pos + 5] = bytes([0xFE, 0xFF, 0xFF, 0xFF, 0x0F])  # zigzag varint: ~2^31
        p.write_bytes(bytes(b))
        _run(p)
