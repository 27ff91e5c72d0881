"""Writes the sample Delta table used by `make demo`, the SQLite connector tests and
bench/sqlite_*.py, with delta-rs (the `deltalake` package) until dk writes tables.

    make_sample.py DEST [--rows-per-commit N] [--commits K] [--row-group-rows R]

Table `sales`: partitioned by `region` ('apac', 'eu', 'us'); K appends (versions 0..K-1), each
of N rows with ids continuing the previous commit, so every file holds one contiguous id range
(file statistics can skip on id) sorted by id in row groups of R rows. Then one more commit
(version K) deletes the rows with id < 100 (rewriting only the first commit's files), so time
travel to version K-1 sees them again.
"""

import argparse
import datetime as dt
import decimal
import shutil
import sys

import pyarrow as pa
from deltalake import DeltaTable, WriterProperties, write_deltalake

REGIONS = ["apac", "eu", "us"]


def batch(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    day0 = dt.date(2024, 1, 1)
    t0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "region": pa.array([REGIONS[i % 3] for i in ids]),
        "day": pa.array([day0 + dt.timedelta(days=i // 1000) for i in ids], pa.date32()),
        "ts": pa.array([t0 + dt.timedelta(seconds=37 * i) for i in ids], pa.timestamp("us", "UTC")),
        "qty": pa.array([(i * 7) % 11 for i in ids], pa.int32()),
        "price": pa.array([round(1.5 + (i % 97) * 0.25, 2) for i in ids], pa.float64()),
        "amount": pa.array([decimal.Decimal(i % 1000) / 100 for i in ids], pa.decimal128(10, 2)),
        "paid": pa.array([i % 4 != 0 for i in ids], pa.bool_()),
        "note": pa.array([None if i % 5 == 0 else f"n{i % 13}" for i in ids]),
        "tags": pa.array([[f"t{i % 3}", f"u{i % 2}"][: i % 3] for i in ids], pa.list_(pa.string())),
    })


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dest")
    ap.add_argument("--rows-per-commit", type=int, default=3000)
    ap.add_argument("--commits", type=int, default=4)
    ap.add_argument("--row-group-rows", type=int, default=250)
    a = ap.parse_args()
    shutil.rmtree(a.dest, ignore_errors=True)
    props = WriterProperties(max_row_group_size=a.row_group_rows, compression="ZSTD")
    for k in range(a.commits):
        write_deltalake(a.dest, batch(k * a.rows_per_commit, a.rows_per_commit),
                        partition_by=["region"], mode="append", writer_properties=props)
    DeltaTable(a.dest).delete("id < 100", writer_properties=props)
    print(f"wrote {a.dest}: versions 0..{a.commits}", file=sys.stderr)


if __name__ == "__main__":
    main()
