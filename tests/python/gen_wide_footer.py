#!/usr/bin/env python3
"""Writes tests/unit/data/wide_footer.parquet for tests/unit/test_storage_mem.c: a Parquet file
whose footer is larger than the 64 KiB the reader fetches with its first batched read
(src/codec/parquet/reader.c FOOTER_READ), so opening it needs the second read of the footer's
head. 400 int64 columns c0..c399, 3 rows, value of column k in row r = k * 10 + r, written by
pyarrow (no compression, statistics on); the values are the oracle the C test checks.

Run: .venv/bin/python tests/python/gen_wide_footer.py  (deterministic)
"""
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

OUT = Path(__file__).resolve().parents[2] / "tests" / "unit" / "data" / "wide_footer.parquet"
COLS, ROWS = 400, 3


def main() -> None:
    t = pa.table({f"c{k}": pa.array([k * 10 + r for r in range(ROWS)], pa.int64())
                  for k in range(COLS)})
    pq.write_table(t, OUT, compression="none")
    md = pq.ParquetFile(OUT).metadata
    assert md.serialized_size > 64 * 1024, md.serialized_size
    print(f"{OUT}: {OUT.stat().st_size} bytes, footer {md.serialized_size} bytes")


if __name__ == "__main__":
    main()
