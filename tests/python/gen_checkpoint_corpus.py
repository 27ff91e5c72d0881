#!/usr/bin/env python3
"""Writes the seed corpus of fuzz/checkpoint_fuzzer.c into fuzz/corpora/checkpoint/.

Seeds: small real checkpoint files copied from the shared corpus (classic with DVs on add and
remove rows and partition values, classic with remove tombstones carrying DVs, a multi-part
part, a V2 top-level Parquet file and a V2 sidecar), pyarrow rewrites of them in other page layouts
(dictionary / PLAIN, data page v2, several row groups, DELTA_* encodings), a small synthetic
checkpoint (bench/snapshot_load.py make_table) carrying tags, row tracking, null partition
values and DVs of every storage type, its maps under legacy Parquet names
(tests/python/test_log_checkpoint_direct.py enrich_checkpoint, legacy_map_names), and a few deliberately corrupted copies (byte flips inside the add.path /
add.partitionValues / remove.path column chunks found from pyarrow's metadata, truncations).
Deterministic. Keep the total small (the replay runs under ASan in CI).

Usage: .venv/bin/python tests/python/gen_checkpoint_corpus.py
"""
import random
import shutil
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "bench"))

import dkharness  # noqa: E402
from test_log_checkpoint_direct import (LAYOUTS, enrich_checkpoint,  # noqa: E402
                                        legacy_map_names, rewrite)

OUT = ROOT / "fuzz" / "corpora" / "checkpoint"
TD = dkharness.testdata_dir()

REAL = {
    "classic-dv-partitioned.parquet":
        "delta-golden/dv-partitioned-with-checkpoint/_delta_log/"
        "00000000000000000010.checkpoint.parquet",
    "classic-dv-removes.parquet":
        "delta-kernel-defaults/basic-dv-with-checkpoint/_delta_log/"
        "00000000000000000010.checkpoint.parquet",
    "multipart-1of2.parquet":
        "delta-golden/multi-part-checkpoint/_delta_log/"
        "00000000000000000001.checkpoint.0000000001.0000000002.parquet",
    "v2-top-level.parquet":
        "delta-golden/v2-checkpoint-parquet/_delta_log/"
        "00000000000000000002.checkpoint.e8fa2696-9728-4e9c-b285-634743fdd4fb.parquet",
    "v2-sidecar.parquet":
        "delta-golden/v2-checkpoint-parquet/_delta_log/_sidecars/"
        "00000000000000000002.checkpoint.0000000001.0000000002."
        "055454d8-329c-4e0e-864d-7f867075af33.parquet",
}

# (seed name, layout name): pyarrow rewrites (of small seeds: every row group and page repeats
# ~65 column chunks, so layouts with many of them grow fast)
REWRITES = [
    ("v2-sidecar.parquet", "plain-v1-none-rg2"),
    ("v2-sidecar.parquet", "delta-enc-v2-rg3"),
    ("synthetic-all-fields.parquet", "dict-v2-zstd-tiny"),
]

# (seed name, column chunk prefix or "cut" / "truncate")
CORRUPT = [
    ("classic-dv-partitioned.parquet", "add.path"),
    ("classic-dv-removes.parquet", "remove.path"),
    ("synthetic-all-fields.parquet", "add.partitionValues.map.v"),  # legacy names
    ("v2-sidecar.plain-v1-none-rg2.parquet", "add.partitionValues.key_value.key"),
    ("synthetic-all-fields.parquet", "cut"),
    ("v2-sidecar.parquet", "truncate"),
]


def chunk_ranges(path: Path, prefixes) -> list:
    md = pq.ParquetFile(path).metadata
    out = []
    for g in range(md.num_row_groups):
        for j in range(md.num_columns):
            c = md.row_group(g).column(j)
            if c.path_in_schema.startswith(prefixes):
                start = c.dictionary_page_offset or c.data_page_offset
                out.append((c.path_in_schema, start, c.total_compressed_size))
    return out


def main() -> None:
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    for name, rel in REAL.items():
        shutil.copyfile(TD / rel, OUT / name)
    # synthetic: every add/remove field the direct path reads
    import snapshot_load
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "t"
        facts = snapshot_load.make_table(root, 1000, seed=11)
        ck = root / "_delta_log" / "00000000000000000100.checkpoint.parquet"
        # keep the head rows (protocol, metaData, txn), 24 adds and 8 removes
        t = pq.read_table(ck)
        head = facts["checkpoint_rows"] - facts["checkpoint_adds"] - facts["tombstones"]
        t = pa.concat_tables([t.slice(0, head + 24), t.slice(head + facts["checkpoint_adds"], 8)])
        pq.write_table(t, ck)
        enrich_checkpoint(ck)
        legacy_map_names(ck)  # maps named map / k / v (its rewrites below use key_value)
        shutil.copyfile(ck, OUT / "synthetic-all-fields.parquet")
    for name, layout in REWRITES:
        dst = OUT / f"{Path(name).stem}.{layout}.parquet"
        shutil.copyfile(OUT / name, dst)
        kw = LAYOUTS[layout]
        if name.startswith("synthetic"):
            kw = kw | {"data_page_size": 1024, "write_batch_size": 8, "row_group_size": 16}
        rewrite(dst, kw)
    rng = random.Random(20261130)
    for name, what in CORRUPT:
        data = (OUT / name).read_bytes()
        stem = Path(name).stem
        if what == "truncate":
            (OUT / f"{stem}.truncated.parquet").write_bytes(data[:len(data) * 2 // 3])
            continue
        col, start, size = chunk_ranges(OUT / name, ("add.path",) if what == "cut" else (what,))[0]
        if what == "cut":  # 64 bytes cut out of the add.path chunk: offsets point past pages
            at = start + size // 2
            (OUT / f"{stem}.cut.parquet").write_bytes(data[:at] + data[at + 64:])
            continue
        bad = bytearray(data)
        for _ in range(3):
            at = start + rng.randrange(size)
            bad[at] ^= 1 << rng.randrange(8)
        (OUT / f"{stem}.flip-{col}.parquet").write_bytes(bytes(bad))
    total = sum(p.stat().st_size for p in OUT.iterdir())
    print(f"{len(list(OUT.iterdir()))} seeds, {total} bytes")


if __name__ == "__main__":
    main()
