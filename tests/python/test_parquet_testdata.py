"""Every Parquet file under ../shared/testdata (Delta data files and checkpoints written by
Spark/Delta/Databricks) must decode with dk; where pyarrow can read the file, dk's rows must
equal pyarrow's value by value."""
import glob
import os

import pyarrow.parquet as pq
import pytest

from pq_oracle import ROOT, compare_rows, expected_rows, run_dk

import json

TESTDATA = os.environ.get("DK_TESTDATA", os.path.join(os.path.dirname(ROOT), "shared", "testdata"))
BIG = 20000
FILES = sorted(glob.glob(os.path.join(TESTDATA, "**", "*.parquet"), recursive=True))


def _int96_columns(path):
    s = pq.ParquetFile(path).schema
    return {s.column(i).path.split(".")[0] for i in range(len(s)) if s.column(i).physical_type == "INT96"}


def test_found_files():
    assert len(FILES) > 100


@pytest.mark.parametrize("chunk", range(8))
def test_testdata_files(chunk):
    failures = []
    for path in FILES[chunk::8]:
        limit = []
        num_rows = pq.ParquetFile(path).metadata.num_rows
        if num_rows > BIG:
            # decode everything, compare values on a prefix (keeps the suite fast)
            r = run_dk("parquet", "cat", path, "--format", "count")
            if r.returncode != 0 or int(r.stdout) != num_rows:
                failures.append(f"{path}: dk count failed: {r.stdout!r} {r.stderr.decode(errors='replace')}")
                continue
            limit = ["--limit", str(BIG)]
        r = run_dk("parquet", "cat", path, "--format", "jsonl", *limit)
        if r.returncode != 0:
            failures.append(f"{path}: dk failed: {r.stderr.decode(errors='replace')}")
            continue
        got = [json.loads(line) for line in r.stdout.decode().splitlines()]
        try:
            t = pq.read_table(path, coerce_int96_timestamp_unit="us")
            if limit:
                t = t.slice(0, BIG)
        except Exception:  # pyarrow cannot read it: decoding without error is the check
            continue
        try:
            compare_rows(expected_rows(t, utc_columns=_int96_columns(path)), got)
        except AssertionError as e:
            failures.append(f"{path}: {e}")
    assert not failures, "\n".join(failures[:20])
