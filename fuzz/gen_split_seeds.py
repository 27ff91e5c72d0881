#!/usr/bin/env python3
"""Seed corpus of fuzz/split_fuzzer.c: splits of real tables (`dk scan --dump-splits`), each
with its table root rewritten to the path relative to the repository root
("../shared/testdata/<table>" or "tests/unit/data/<table>"), so the fuzzer and
`make test-fuzz` (run from the repository root) read the same files on any machine.

Run from the repository root after `make build`: python3 fuzz/gen_split_seeds.py
"""
import hashlib
import os
import pathlib
import struct
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[1]
DK = REPO / os.environ.get("DK_BUILD", "build") / "dk"
OUT = REPO / "fuzz" / "corpora" / "split"

# (root relative to the repository, extra `dk scan` arguments)
CASES = [
    ("../shared/testdata/delta-golden/data-reader-primitives", []),
    ("../shared/testdata/delta-golden/data-reader-partition-values",
     ["--where", "as_int > 0 AND as_string IS NOT NULL", "--columns", "as_int,as_long,as_string"]),
    ("../shared/testdata/delta-golden/dv-partitioned-with-checkpoint",
     ["--with-metadata", "--limit", "7"]),
    ("../shared/testdata/delta-golden/dv-with-columnmapping", ["--where", "col1 > 10"]),
    ("../shared/testdata/delta-golden/data-reader-nested-struct", ["--columns", "a.aa,b"]),
    ("../shared/testdata/delta-golden/type-widening", []),
    ("../shared/testdata/delta-golden/table-with-columnmapping-mode-id", ["--with-metadata"]),
    ("../shared/testdata/delta-kernel-defaults/basic-dv-with-checkpoint",
     ["--where", "id < 30 OR id > 200", "--batch-size", "17"]),
    ("../shared/testdata/delta-golden/parquet-all-types", ["--split-size", "10000"]),
]


def set_root(split: bytes, root: str) -> bytes:
    assert split[:8] == b"DKSPLIT1"
    (n,) = struct.unpack_from("<I", split, 8)
    r = root.encode()
    return split[:8] + struct.pack("<I", len(r)) + r + split[12 + n:]


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    n = 0
    for root, args in CASES:
        with tempfile.TemporaryDirectory() as d:
            p = subprocess.run([str(DK), "scan", str(REPO / root), "--dump-splits", d, *args],
                               capture_output=True, cwd=REPO)
            if p.returncode:
                sys.exit(f"{root}: {p.stderr.decode()}")
            for f in sorted(pathlib.Path(d).iterdir()):
                data = set_root(f.read_bytes(), root)
                (OUT / ("seed-" + hashlib.sha1(data).hexdigest()[:16])).write_bytes(data)
                n += 1
    print(f"{n} seeds in {OUT}")


if __name__ == "__main__":
    main()
