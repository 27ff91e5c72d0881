"""Column chunks larger than the reader's page window (1 MiB): without --mmap dk reads a chunk
page by page into a bounded window, so pages straddle window edges, a dictionary page is
followed by megabytes of data pages, uncompressed dictionaries must outlive the window and
dictionary fallback to PLAIN happens mid-chunk. pyarrow's read of the same file is the
oracle, value by value, with and without mmap."""
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pq_oracle import compare_rows, dk_rows, expected_rows

N = 40000


def make_table(seed=7):
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz0123456789"
    few = ["v%03d-" % i + "y" * rng.randint(0, 40) for i in range(200)]
    return pa.table({
        # dictionary-encoded throughout (200 distinct values), nulls
        "dict_s": pa.array([None if rng.random() < 0.1 else rng.choice(few) for _ in range(N)]),
        # unique long strings: the dictionary overflows and pages fall back to PLAIN
        "uniq_s": pa.array(["%08d:" % i + "".join(rng.choice(letters) for _ in range(rng.randint(20, 120)))
                            for i in range(N)]),
        "i64": pa.array([None if rng.random() < 0.05 else rng.randint(-2**62, 2**62) for _ in range(N)], pa.int64()),
        "l_s": pa.array([[rng.choice(few) for _ in range(rng.randint(0, 3))] for _ in range(N)], pa.list_(pa.string())),
    })


@pytest.mark.parametrize("codec", ["none", "snappy"])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_chunks_larger_than_window(tmp_path, codec, version):
    t = make_table()
    path = tmp_path / f"w-{codec}-{version}.parquet"
    pq.write_table(t, path, compression=codec, data_page_version=version,
                   row_group_size=N, data_page_size=48 * 1024, dictionary_pagesize_limit=256 * 1024)
    md = pq.ParquetFile(path).metadata
    # the test is only meaningful when some chunk exceeds the 1 MiB window
    assert max(md.row_group(0).column(i).total_compressed_size
               for i in range(md.num_columns)) > (1 << 20)
    exp = expected_rows(pq.read_table(path))
    compare_rows(exp, dk_rows(path, "--batch-size", "3000"))
    compare_rows(exp, dk_rows(path, "--mmap"))
