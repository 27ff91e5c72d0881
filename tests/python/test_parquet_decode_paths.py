"""Decode fast paths of dk's Parquet reader (issue #2 benchmark work), against pyarrow's read
of the same files, value by value:
  * flat nullable columns whose definition levels are taken run by run: all-valid pages,
    nulls only late in a batch (the elided levels must be written out mid-batch), nulls at
    odd positions across page and batch boundaries, an all-valid optional leaf under an
    optional struct;
  * decimals stored as FIXED_LEN_BYTE_ARRAY of every width 1..16 (byte-swapped loads for
    widths <= 8), dictionary-encoded and PLAIN, negative and extreme values;
  * string dictionaries with values around the 16-byte fixed-copy boundary (0..40 bytes);
  * 1 and 2 decode threads, odd batch sizes, data page v1 and v2, snappy and uncompressed.
"""
import decimal
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pq_oracle import compare_rows, dk_rows, expected_rows

N = 5000


def _dec_col(rng, precision, n, dict_friendly):
    scale = min(2, precision - 1)
    hi = 10 ** precision - 1
    pool = [rng.randint(-hi, hi) for _ in range(50)] + [hi, -hi, 0, -1, 1]
    vals = []
    with decimal.localcontext() as ctx:
        ctx.prec = 60  # exact scaleb for 38 digits
        for _ in range(n):
            u = rng.choice(pool) if dict_friendly else rng.randint(-hi, hi)
            vals.append(decimal.Decimal(u).scaleb(-scale))
    return pa.array(vals, pa.decimal128(precision, scale))


def make_table(seed=11, n=N):
    rng = random.Random(seed)
    words = ["", "a", "0123456789abcde", "0123456789abcdef", "0123456789abcdefg",
             "x" * 31, "y" * 32, "z" * 40, "ünïcødé", "tab\tq"]
    cols = {
        # all valid but optional (max_def 1): levels never expanded
        "all_valid": pa.array([rng.randint(-10**9, 10**9) for _ in range(n)], pa.int64()),
        # nulls only in the last 7% of rows: elided levels written out mid-batch
        "late_nulls": pa.array([None if i > n * 0.93 and rng.random() < 0.5 else i
                                for i in range(n)], pa.int32()),
        # a few nulls at odd positions
        "odd_nulls": pa.array([None if i % 997 == 3 else rng.random() for i in range(n)],
                              pa.float64()),
        "all_null": pa.array([None] * n, pa.int32()),
        "dict_s": pa.array([rng.choice(words) for _ in range(n)], pa.string()),
        "dict_s_nulls": pa.array([None if rng.random() < 0.1 else rng.choice(words)
                                  for _ in range(n)], pa.string()),
        "plain_s": pa.array(["%d:" % i + "w" * rng.randint(0, 40) for i in range(n)], pa.string()),
        "st": pa.array([None if i % 501 == 0 else {"a": i, "b": rng.choice(words)}
                        for i in range(n)],
                       pa.struct([("a", pa.int64()), ("b", pa.string())])),
        "st_valid": pa.array([{"a": i} for i in range(n)], pa.struct([("a", pa.int32())])),
    }
    for p in (1, 2, 4, 5, 7, 9, 11, 14, 16, 18, 20, 25, 38):
        cols[f"dec{p}_dict"] = _dec_col(rng, p, n, True)
        cols[f"dec{p}_plain"] = _dec_col(rng, p, n, False)
    return pa.table(cols)


@pytest.mark.parametrize("codec", ["none", "snappy"])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_decode_paths(tmp_path, codec, version):
    t = make_table()
    path = tmp_path / f"d-{codec}-{version}.parquet"
    pq.write_table(t, path, compression=codec, data_page_version=version,
                   row_group_size=3000, data_page_size=2048,
                   dictionary_pagesize_limit=4096)
    exp = expected_rows(pq.read_table(path))
    compare_rows(exp, dk_rows(path))
    compare_rows(exp, dk_rows(path, "--batch-size", "777"))
    compare_rows(exp, dk_rows(path, "--batch-size", "4097", "--threads", "2"))
    compare_rows(exp, dk_rows(path, "--batch-size", "13", "--mmap"))
