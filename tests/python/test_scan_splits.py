"""Splits, row-group skipping and multi-row-group reads on a table written by delta-rs.

The table (20,000 rows, partitioned by p, 1,000-row row groups) is written here with
deltalake (delta-rs) from a pyarrow table; that source table is the oracle, and delta-rs'
own read of the table is checked to agree with it first. dk must return exactly the source
rows (filtered in Python for --where) whether it reads the scan whole or split by split
(serialized splits read back through dk_split_read), at any split size or batch size.
"""

import json

import pytest

import dkharness as h

N = 20000


@pytest.fixture(scope="module")
def rg_table(tmp_path_factory):
    pa = pytest.importorskip("pyarrow")
    deltalake = pytest.importorskip("deltalake")
    from deltalake import WriterProperties, write_deltalake
    d = tmp_path_factory.mktemp("rgtable") / "t"
    src = pa.table({
        "id": pa.array(range(N), pa.int64()),
        "s": pa.array([str(i % 97) for i in range(N)]),
        "x": pa.array([None if i % 11 == 0 else i * 0.5 for i in range(N)], pa.float64()),
        "p": pa.array([i % 3 for i in range(N)], pa.int32()),
    })
    write_deltalake(str(d), src, partition_by=["p"],
                    writer_properties=WriterProperties(max_row_group_size=1000,
                                                       write_batch_size=1000))
    rows = src.to_pylist()
    back = deltalake.DeltaTable(str(d)).to_pyarrow_table().to_pylist()
    key = lambda r: r["id"]  # noqa: E731
    assert sorted(back, key=key) == sorted(rows, key=key)
    return d, rows


def _dk_rows(out):
    return [json.loads(l) for l in out.splitlines() if l.strip()]


def _norm(rows):
    return sorted((r["id"], r["s"], r["x"], r["p"]) for r in rows)


@pytest.mark.dk_command("scan")
@pytest.mark.parametrize("split_size", [1, 20000, 70000, 150000, 1 << 27])
def test_reading_all_splits_equals_the_table(rg_table, split_size):
    d, rows = rg_table
    rc, out, err = h.run_dk("scan", d, "--via-splits", "--split-size", split_size)
    assert rc == 0, err[-3000:]
    assert _norm(_dk_rows(out)) == _norm(rows)
    n_splits = int(err.strip().splitlines()[-1].split(":")[1])
    if split_size < 4 << 20:
        assert n_splits >= 3  # the 4 MiB open cost alone exceeds the target: a split per piece
    else:
        assert n_splits == 1  # three ~75 KB files + 3 x 4 MiB open cost fit in one split


@pytest.mark.dk_command("scan")
@pytest.mark.parametrize("batch", [1, 333, 1000, 65536])
def test_batch_sizes(rg_table, batch):
    d, rows = rg_table
    rc, out, err = h.run_dk("scan", d, "--batch-size", batch)
    assert rc == 0, err[-3000:]
    assert _norm(_dk_rows(out)) == _norm(rows)


@pytest.mark.dk_command("scan")
@pytest.mark.parametrize("threads", [2, 3, 8])
def test_threads(rg_table, threads):
    d, rows = rg_table
    rc, out, err = h.run_dk("scan", d, "--threads", threads, "--batch-size", 700,
                            "--where", "s <> '3'")
    assert rc == 0, err[-3000:]
    assert _norm(_dk_rows(out)) == _norm([r for r in rows if r["s"] != "3"])


WHERE = [
    ("id < 1500 AND p = 1", lambda r: r["id"] < 1500 and r["p"] == 1),
    ("id >= 1500 AND id < 1600 OR s = 'x'", lambda r: 1500 <= r["id"] < 1600 or r["s"] == "x"),
    ("s = '5'", lambda r: r["s"] == "5"),
    ("x IS NULL AND id > 19000", lambda r: r["x"] is None and r["id"] > 19000),
    ("x > 9990.0", lambda r: r["x"] is not None and r["x"] > 9990.0),
    ("id IN (5, 5000, 19999)", lambda r: r["id"] in (5, 5000, 19999)),
]


@pytest.mark.dk_command("scan")
@pytest.mark.parametrize("where,pred", WHERE, ids=[w for w, _ in WHERE])
@pytest.mark.parametrize("via_splits", [False, True])
def test_where_with_row_group_skipping(rg_table, where, pred, via_splits):
    d, rows = rg_table
    extra = ["--via-splits", "--split-size", "30000"] if via_splits else ["--stats"]
    rc, out, err = h.run_dk("scan", d, "--where", where, *extra)
    assert rc == 0, err[-3000:]
    assert _norm(_dk_rows(out)) == _norm([r for r in rows if pred(r)])
    if not via_splits:
        st = json.loads(err.strip().splitlines()[-1])
        assert st["rows_decoded"] - st["rows_filtered"] == st["rows_returned"]
        if where.startswith("id "):
            # id ranges are contiguous per row group: most row groups must be skipped
            assert st["row_groups_skipped"] > st["row_groups_total"] // 2


@pytest.mark.dk_command("scan")
def test_row_index_across_row_groups(rg_table):
    import pyarrow.parquet as pq
    d, rows = rg_table
    rc, out, err = h.run_dk("scan", d, "--with-metadata", "--where", "id >= 0",
                            "--via-splits", "--split-size", "20000")
    assert rc == 0, err[-3000:]
    files = {}
    for r in _dk_rows(out):
        m = r["_metadata"]
        path = m["file_path"][len("file://"):]
        if path not in files:
            files[path] = pq.read_table(path).column("id").to_pylist()
        assert files[path][m["row_index"]] == r["id"]
        assert 0 <= m["file_block_start"] < m["file_size"]
        assert m["file_block_length"] > 0


@pytest.mark.dk_command("scan")
def test_limit_pushdown_prunes_files(rg_table):
    d, rows = rg_table
    rc, out, err = h.run_dk("scan", d, "--limit", "10", "--stats")
    assert rc == 0, err
    assert len(_dk_rows(out)) == 10
    st = json.loads(err.strip().splitlines()[-1])
    assert st["files_pruned_limit"] == 2 and st["files_selected"] == 1
    assert st["rows_returned"] == 10
