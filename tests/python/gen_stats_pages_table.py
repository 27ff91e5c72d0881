#!/usr/bin/env python3
"""Writes the small Delta table of tests/unit/test_snapshot_prefetch.c.

tests/unit/data/stats_pages_table/: the P1 benchmark's synthetic checkpoint
(bench/snapshot_load.py make_table, 1,200 live files, seed 7) with its JSON commits deleted,
so the table is its checkpoint at version 100 alone, rewritten by pyarrow with 1 KiB data
pages (PLAIN, snappy) and row groups of 300 rows: its add.stats column is stored in ~200
pages, which dk keeps compressed and decodes one by one (a file iterator reads the next page ahead on the table's executor).

tests/unit/data/stats_pages_table.expected.jsonl: the oracle, pyarrow's read of the
checkpoint: one line [path, stats length, FNV-1a 64 of the stats text as 16 hex digits] per
add row.

Run: .venv/bin/python tests/python/gen_stats_pages_table.py  (deterministic)
"""
import json
import shutil
import sys
from pathlib import Path

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import snapshot_load  # noqa: E402

OUT = ROOT / "tests" / "unit" / "data" / "stats_pages_table"
EXPECTED = ROOT / "tests" / "unit" / "data" / "stats_pages_table.expected.jsonl"


def fnv1a64(b: bytes) -> int:
    h = 0xcbf29ce484222325
    for c in b:
        h = ((h ^ c) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def main():
    if OUT.exists():
        shutil.rmtree(OUT)
    snapshot_load.make_table(OUT, 1200, seed=7)
    log = OUT / "_delta_log"
    ck = log / f"{snapshot_load.CHECKPOINT_VERSION:020d}.checkpoint.parquet"
    for f in log.glob("*.json"):
        f.unlink()
    table = pq.read_table(ck)
    pq.write_table(table, ck, compression="snappy", use_dictionary=False, data_page_size=1024,
                   row_group_size=300, write_statistics=False)
    lc = json.loads((log / "_last_checkpoint").read_text())
    lc["sizeInBytes"] = ck.stat().st_size
    (log / "_last_checkpoint").write_text(json.dumps(lc, separators=(",", ":")))
    add = table.column("add").combine_chunks()
    with open(EXPECTED, "w") as fh:
        for row in add.to_pylist():
            if row is not None:
                st = row["stats"].encode()
                fh.write(json.dumps([row["path"], len(st), "%016x" % fnv1a64(st)]) + "\n")


if __name__ == "__main__":
    main()
