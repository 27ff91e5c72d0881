#!/usr/bin/env bash
# demo.sh — README's main job: build dk, make a small sample with pyarrow, and read it back with
# dk's native Parquet reader. (It grows into SQL over Delta tables as the connectors land.)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
DK="$BUILD/dk"
SAMPLE=${DK_DEMO_DIR:-$BUILD/demo}
mkdir -p "$SAMPLE"
.venv/bin/python - "$SAMPLE/sample.parquet" <<'PY'
import sys, datetime, decimal
import pyarrow as pa, pyarrow.parquet as pq
n = 10
t = pa.table({
    "id": pa.array(range(n), pa.int64()),
    "city": pa.array(["Lisbon", "Oslo", None, "Kyoto", "Lima", "Oslo", "Accra", None, "Quito", "Riga"]),
    "price": pa.array([decimal.Decimal(f"{i * 3.25:.2f}") for i in range(n)], pa.decimal128(9, 2)),
    "day": pa.array([datetime.date(2024, 1, 1) + datetime.timedelta(days=i) for i in range(n)]),
    "tags": pa.array([["a", "b"][: i % 3] for i in range(n)], pa.list_(pa.string())),
})
pq.write_table(t, sys.argv[1], compression="zstd", row_group_size=4)
PY
echo "\$ dk parquet schema $SAMPLE/sample.parquet"
"$DK" parquet schema "$SAMPLE/sample.parquet"
echo
echo "\$ dk parquet cat $SAMPLE/sample.parquet --columns id,city,price --format table"
"$DK" parquet cat "$SAMPLE/sample.parquet" --columns id,city,price --format table
echo
echo "\$ dk parquet cat $SAMPLE/sample.parquet --format jsonl"
"$DK" parquet cat "$SAMPLE/sample.parquet" --format jsonl
