"""Actions written by dk's serializer (src/protocol/actions.c) are read by readers we did not
write: tests/tools/write_actions.c writes a three-version table's log with nothing but
dk_protocol__action_write (protocol, metaData, adds with stats, tags and a null partition,
a remove with extended file metadata, a URL-encoded path, txn, domainMetadata, a deletion
vector). Oracles: pyarrow's JSON reader parses every commit file (one row per action, the
fields where delta-spark puts them); delta-rs (`deltalake`) opens every version and lists
the same active files, sizes, partition values and record counts that were written; dk reads
the same table alike. (The corpus round trip, parse then write byte for byte, is
tests/unit/test_protocol_actions.c.)
"""
import json
import os
import subprocess
from pathlib import Path
from urllib.parse import unquote

import pytest

from test_py_support import import_dk

pa_json = pytest.importorskip("pyarrow.json")
pa = pytest.importorskip("pyarrow")
dk = import_dk()

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / os.environ.get("DK_BUILD", "build") / "dk_test_write_actions"

# version -> {path (decoded): (size, partition value of p, numRecords, has DV)}
WANT = {
    0: {"p=a/part-0.parquet": (100, "a", 3, False),
        "p=__HIVE_DEFAULT_PARTITION__/part-1.parquet": (200, None, 5, False)},
    1: {"p=b c/f 2.parquet": (300, "b c", 7, False),
        "p=__HIVE_DEFAULT_PARTITION__/part-1.parquet": (200, None, 5, False)},
    2: {"p=b c/f 2.parquet": (300, "b c", 7, False),
        "p=__HIVE_DEFAULT_PARTITION__/part-1.parquet": (200, None, 5, True)},
}


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    if not TOOL.exists():
        pytest.fail(f"{TOOL} not built (make build)")
    root = tmp_path_factory.mktemp("actions") / "t"
    subprocess.run([str(TOOL), str(root)], check=True)
    return root


def test_pyarrow_parses_every_commit(table):
    for v in range(3):
        path = table / "_delta_log" / f"{v:020d}.json"
        lines = [json.loads(x) for x in path.read_text().splitlines()]
        t = pa_json.read_json(path)
        assert t.num_rows == len(lines)
        assert set(t.column_names) == {k for line in lines for k in line}
    t = pa_json.read_json(table / "_delta_log" / f"{0:020d}.json").to_pylist()
    meta = next(r["metaData"] for r in t if r["metaData"])
    assert meta["format"] == {"provider": "parquet", "options": {}}
    assert meta["partitionColumns"] == ["p"]
    adds = [r["add"] for r in t if r["add"]]
    assert [a["partitionValues"]["p"] for a in adds] == ["a", None]
    assert adds[0]["tags"] == {"INSERTION_TIME": "1700000000001000"}


deltalake = pytest.importorskip("deltalake")


@pytest.mark.parametrize("version", [0, 1, 2])
def test_delta_rs_reads_the_log(table, version):
    t = deltalake.DeltaTable(str(table), version=version)
    assert t.version() == version
    adds = pa.table(t.get_add_actions(flatten=True)).to_pylist()
    # (delta-rs 1.x lists no deletion-vector columns here: the DV flag is checked by dk below)
    got = {unquote(a["path"]): (a["size_bytes"], a["partition.p"], a["num_records"])
           for a in adds}
    assert got == {k: v[:3] for k, v in WANT[version].items()}
    if version == 0:
        assert t.metadata().partition_columns == ["p"]
    if version == 2:
        p = t.protocol()
        assert (p.min_reader_version, p.min_writer_version) == (3, 7)
        assert p.reader_features == ["deletionVectors"]


@pytest.mark.parametrize("version", [0, 1, 2])
def test_dk_reads_the_log(table, version):
    s = dk.Table(str(table)).snapshot(version=version)
    got = {f["path"]: (f["size"], f["partition_values"]["p"],
                       json.loads(f["stats"])["numRecords"], f["deletion_vector"] is not None)
           for f in s.files()}
    assert got == WANT[version]
    if version >= 1:
        assert s.transactions() == {"stream-1": {"version": 42, "last_updated": 1700000001000}}
        assert [t["path"] for t in s.tombstones()][:1] == ["p=a/part-0.parquet"]
