"""`_metadata.row_id` / `row_commit_version` on a row-tracking table (PROTOCOL.md "Row Tracking").

No table of the shared corpus enables row tracking, so this test writes one: Parquet data
files with pyarrow and a Delta log by hand (protocol with the rowTracking writer feature,
delta.enableRowTracking, materialised column names in the configuration, AddFile
baseRowId / defaultRowCommitVersion). The expected values follow the protocol's rule,
computed here from the physical row positions pyarrow reports: a row's id is the
materialised value when present and non-null, else baseRowId + its row index; its commit
version is the materialised value when non-null, else the file's defaultRowCommitVersion.
"""

import json
import os

import pytest

import dkharness as h

MAT_ID = "_row-id-col-1d2f"
MAT_CV = "_row-commit-version-col-77aa"


@pytest.fixture(scope="module")
def rt_table(tmp_path_factory):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    root = tmp_path_factory.mktemp("rt") / "t"
    (root / "_delta_log").mkdir(parents=True)
    files = []
    # file a: no materialised columns; file b: materialised columns with some nulls
    ta = pa.table({"x": pa.array(range(0, 50), pa.int64())})
    pq.write_table(ta, root / "a.parquet", row_group_size=16)
    mat_id = [None if i % 3 else 1000 + i for i in range(30)]
    mat_cv = [None if i % 4 else 9 for i in range(30)]
    tb = pa.table({"x": pa.array(range(100, 130), pa.int64()),
                   MAT_ID: pa.array(mat_id, pa.int64()), MAT_CV: pa.array(mat_cv, pa.int64())})
    pq.write_table(tb, root / "b.parquet", row_group_size=7)
    files = [("a.parquet", 0, 1, 50), ("b.parquet", 50, 2, 30)]
    schema = {"type": "struct", "fields": [{"name": "x", "type": "long", "nullable": True,
                                            "metadata": {}}]}
    commit = [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 7,
                      "writerFeatures": ["rowTracking", "domainMetadata"]}},
        {"metaData": {"id": "rt", "format": {"provider": "parquet", "options": {}},
                      "schemaString": json.dumps(schema), "partitionColumns": [],
                      "configuration": {
                          "delta.enableRowTracking": "true",
                          "delta.rowTracking.materializedRowIdColumnName": MAT_ID,
                          "delta.rowTracking.materializedRowCommitVersionColumnName": MAT_CV},
                      "createdTime": 1}},
    ]
    for name, base, dcv, n in files:
        commit.append({"add": {"path": name, "partitionValues": {},
                               "size": os.path.getsize(root / name), "modificationTime": 1,
                               "dataChange": True,
                               "stats": json.dumps({"numRecords": n}),
                               "baseRowId": base, "defaultRowCommitVersion": dcv}})
    (root / "_delta_log" / "00000000000000000000.json").write_text(
        "\n".join(json.dumps(a) for a in commit) + "\n")
    expect = {}
    for name, base, dcv, n in files:
        t = pq.read_table(root / name).to_pylist()
        for i, r in enumerate(t):
            rid = r.get(MAT_ID)
            rcv = r.get(MAT_CV)
            expect[r["x"]] = (rid if rid is not None else base + i,
                              rcv if rcv is not None else dcv, i)
    return root, expect


@pytest.mark.dk_command("scan")
@pytest.mark.parametrize("extra", [[], ["--via-splits", "--split-size", "64"],
                                   ["--where", "x > 10"]])
def test_row_ids_follow_the_protocol_rule(rt_table, extra):
    root, expect = rt_table
    rc, out, err = h.run_dk("scan", root, "--with-metadata", *extra)
    assert rc == 0, err[-3000:]
    rows = [json.loads(l) for l in out.splitlines() if l.strip()]
    want = {x: v for x, v in expect.items() if "--where" not in extra or x > 10}
    assert sorted(r["x"] for r in rows) == sorted(want)
    for r in rows:
        m = r["_metadata"]
        rid, rcv, idx = want[r["x"]]
        assert (m["row_id"], m["row_commit_version"], m["row_index"]) == (rid, rcv, idx), r
        assert list(r) == ["x", "_metadata"]  # materialised columns stay hidden
