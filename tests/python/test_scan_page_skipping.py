"""Page skipping by the Parquet page index (ColumnIndex + OffsetIndex).

Data files are written here by pyarrow with `write_page_index=True`, a tiny data page size
and 100-row write batches, so every column chunk has many pages; a Delta log naming them is
written by hand (no per-file stats: only row groups and pages can be skipped). The oracle is
pyarrow itself: the same files read and filtered with pyarrow.compute (NULL drops a row).
dk's rows must equal pyarrow's, `_metadata.row_index` must name each row's position in its
file, and a selective predicate must skip pages (counted in --stats "pages_skipped").
"""

import json

import pytest

import dkharness as h

N = 6000


def _write(pa, pq, path, offset, batch):
    ids = list(range(offset, offset + N))
    t = pa.table({
        "id": pa.array(ids, pa.int64()),
        "v": pa.array([None if i % 17 == 0 else (i * 7) % 1000 for i in ids], pa.int32()),
        "s": pa.array(["name-%06d" % i for i in ids]),
        "x": pa.array([i * 0.5 for i in ids], pa.float64()),
        "n": pa.array([None if (i - offset) // 500 in (3, 4) else i for i in ids], pa.int64()),
    })
    pq.write_table(t, path, row_group_size=3000, write_page_index=True, data_page_size=512,
                   write_batch_size=batch, compression="snappy")
    return t


@pytest.fixture(scope="module")
def page_table(tmp_path_factory):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    root = tmp_path_factory.mktemp("pages") / "t"
    (root / "_delta_log").mkdir(parents=True)
    # file a: 100-row batches (page boundaries shared by all columns); file b: 64-row batches
    srcs = [_write(pa, pq, root / "a.parquet", 0, 100), _write(pa, pq, root / "b.parquet", N, 64)]
    for name in ("a.parquet", "b.parquet"):
        md = pq.ParquetFile(root / name).metadata
        assert md.row_group(0).column(0).has_offset_index and md.row_group(0).column(0).has_column_index
    schema = {"type": "struct", "fields": [
        {"name": n, "type": t, "nullable": True, "metadata": {}}
        for n, t in [("id", "long"), ("v", "integer"), ("s", "string"), ("x", "double"),
                     ("n", "long")]]}
    log = [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
           {"metaData": {"id": "page-skip-test", "format": {"provider": "parquet", "options": {}},
                         "schemaString": json.dumps(schema), "partitionColumns": [],
                         "configuration": {}, "createdTime": 0}}]
    for name in ("a.parquet", "b.parquet"):
        log.append({"add": {"path": name, "partitionValues": {},
                            "size": (root / name).stat().st_size, "modificationTime": 0,
                            "dataChange": True}})
    (root / "_delta_log" / ("0" * 20 + ".json")).write_text("\n".join(json.dumps(x) for x in log))
    return root, srcs


# (dk predicate, columns, pyarrow mask, pages must be skipped)
CASES = [
    ("id BETWEEN 1234 AND 1300", "id,v,s", lambda t, pc: pc.and_kleene(
        pc.greater_equal(t["id"], 1234), pc.less_equal(t["id"], 1300)), True),
    ("id < 150 OR id >= 11900", "id,s", lambda t, pc: pc.or_kleene(
        pc.less(t["id"], 150), pc.greater_equal(t["id"], 11900)), True),
    ("s >= 'name-004000' AND s < 'name-004100'", "id,s,x", lambda t, pc: pc.and_kleene(
        pc.greater_equal(t["s"], "name-004000"), pc.less(t["s"], "name-004100")), True),
    ("x > 5990", "id", lambda t, pc: pc.greater(t["x"], 5990.0), False),  # float: no max skipping
    ("x < 10 AND v IS NOT NULL", "id,v", lambda t, pc: pc.and_kleene(
        pc.less(t["x"], 10.0), pc.is_valid(t["v"])), True),
    ("n IS NOT NULL AND id >= 1400 AND id < 2600", "id,n", lambda t, pc: pc.and_kleene(
        pc.is_valid(t["n"]), pc.and_kleene(pc.greater_equal(t["id"], 1400),
                                           pc.less(t["id"], 2600))), True),
    ("n IS NULL", "id,n", lambda t, pc: pc.is_null(t["n"]), True),
    ("v = 7", "id,v", lambda t, pc: pc.equal(t["v"], 7), False),  # v is spread over every page
    ("id = 5000 OR s = 'name-008000'", "id,v,s,x,n", lambda t, pc: pc.or_kleene(
        pc.equal(t["id"], 5000), pc.equal(t["s"], "name-008000")), True),
]


def _want(srcs, cols, mask_fn):
    import pyarrow.compute as pc
    rows = []
    for t in srcs:
        m = pc.fill_null(mask_fn(t, pc), False)
        rows += t.filter(m).select(cols).to_pylist()
    return sorted(rows, key=lambda r: r["id"])


@pytest.mark.dk_command("scan")
@pytest.mark.parametrize("where,cols,mask,skips", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("splits", [False, True], ids=["whole", "splits"])
def test_page_skipping_equals_pyarrow(page_table, where, cols, mask, skips, splits):
    root, srcs = page_table
    extra = ["--via-splits", "--split-size", "60000"] if splits else ["--stats"]
    rc, out, err = h.run_dk("scan", root, "--where", where, "--columns", cols, "--format",
                            "jsonl", "--with-metadata", "--batch-size", "700", *extra)
    assert rc == 0, err[-3000:]
    got = [json.loads(l) for l in out.splitlines() if l.strip()]
    # _metadata.row_index: the row's position in its file (ids are file offset + position)
    for r in got:
        meta = r.pop("_metadata")
        base = 0 if meta["file_name"] == "a.parquet" else N
        assert meta["row_index"] == r["id"] - base, (meta, r)
    got.sort(key=lambda r: r["id"])
    want = _want(srcs, cols.split(","), mask)
    assert got == want
    if splits:
        return  # (split reads print no pushdown counters)
    stats = json.loads([l for l in err.splitlines() if l.startswith("{")][-1])
    assert stats["rows_returned"] == len(want)
    assert stats["rows_decoded"] - stats["rows_filtered"] == len(want)
    if skips:
        assert stats["pages_skipped"] > 0, stats
        assert stats["rows_decoded"] < 2 * N, stats
