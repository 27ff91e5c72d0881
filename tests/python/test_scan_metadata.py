"""`dk scan --with-metadata`: the `_metadata` struct checked against the data files themselves.

Oracles: pyarrow reads the Parquet file named by `_metadata.file_path` and its row at
`_metadata.row_index` must equal the row dk returned (data columns); file size and name come
from the file system; modification time from the Delta log's add action (parsed here with
Python's json); the multiset of rows equals the corpus' expected rows (deletion vectors
applied, so the surviving row indexes are exactly those not deleted).
"""

import json
import os
from pathlib import Path

import pytest

import dkharness as h

CASES = [
    "delta-kernel-defaults/basic-dv-no-checkpoint@latest",
    "delta-golden/dv-partitioned-with-checkpoint@latest",
    "delta-golden/data-reader-primitives@latest",
    "delta-golden/snapshot-data3@latest",
]


def _add_mtimes(table: Path) -> dict:
    """basename -> modificationTime of every add action in the JSON commits."""
    out = {}
    for f in sorted((table / "_delta_log").glob("*.json")):
        for line in f.read_text().splitlines():
            if line.strip():
                a = json.loads(line).get("add")
                if a:
                    out[os.path.basename(a["path"])] = a["modificationTime"]
    return out


@pytest.mark.dk_command("scan")
@pytest.mark.parametrize("cid", CASES)
def test_metadata_points_at_the_rows_in_the_files(cid):
    import pyarrow.parquet as pq
    case = h.case_by_id(cid)
    table = h.table_path(case)
    rc, out, err = h.run_dk("scan", table, "--with-metadata", "--format", "jsonl")
    assert rc == 0, err[-3000:]
    rows = [json.loads(l) for l in out.splitlines() if l.strip()]
    schema = h.case_schema(case)
    data = h.canon_dk_jsonl([{k: v for k, v in r.items() if k != "_metadata"} for r in rows],
                            schema)
    h.assert_rows_equal(data, h.expected_rows(case))
    mtimes = _add_mtimes(table)
    files = {}
    seen = set()
    part_cols = set(case["partition_columns"])
    for r, d in zip(rows, data):
        m = r["_metadata"]
        assert m["file_path"].startswith("file://")
        path = m["file_path"][len("file://"):]
        assert os.path.basename(path) == m["file_name"]
        assert m["file_size"] == os.path.getsize(path)
        assert m["file_block_start"] == 0 and m["file_block_length"] == m["file_size"]
        if m["file_name"] in mtimes:
            got = h.parse_timestamp(m["file_modification_time"], False)
            assert got == mtimes[m["file_name"]] * 1000
        key = (path, m["row_index"])
        assert key not in seen
        seen.add(key)
        if path not in files:
            files[path] = pq.read_table(path)
        t = files[path]
        assert 0 <= m["row_index"] < t.num_rows
        file_row = h.canon_arrow(t.slice(m["row_index"], 1))[0]
        for k, v in d.items():
            if k not in part_cols and k in file_row:
                assert file_row[k] == v, (k, m)
