"""The library's single-file reader (src/scan/file_reader.h: what change data feed and DML
use to find "the rows of this file that match"), through the hidden `dk _rows TABLE` command:
for every active file, the physical row indexes the reader selects.

Oracles: DuckDB evaluates the predicate over the file's rows (logical column names, partition
values added; `read_parquet(..., file_row_number=true)` for the generated files), and the rows
a deletion vector deletes are those of the file missing from the table's expected rows
(<table>.expected.jsonl, restated from the upstream Delta tests; every row of these tables is
distinct, which the test checks). Both reader modes are compared with the oracle: row indexes
(`dk_scan__file_rows`) and batches of `_metadata.row_index` (`--batches`); `--no-dv` reads
past the deletion vector.
"""

import collections
import json

import pytest

import dkharness as h
from test_dv import canon, read_rows, replay

duckdb = pytest.importorskip("duckdb")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

# (table, predicates in dk syntax that are also DuckDB SQL over the logical columns)
DV_CASES = [
    ("delta-kernel-defaults/basic-dv-no-checkpoint", ["id >= 3", "id < 6 OR id = 8"]),
    ("delta-kernel-defaults/basic-dv-with-checkpoint", ["id BETWEEN 100 AND 180", "id IN (3, 77, 140, 249) OR id > 245"]),
    ("delta-golden/dv-partitioned-with-checkpoint",
     ["col1 > 20", "part = 1 AND col1 < 40", "col2 = 'foo0' OR part >= 3"]),
    ("delta-golden/dv-with-columnmapping", ["col1 > 20", "part = 2 OR col2 LIKE 'foo%'"]),
    ("delta-golden/log-replay-dv-key-cases", ["id >= 20", "id IS NOT NULL AND id < 15"]),
]


def dk_rows(root, *args):
    rc, out, err = h.run_dk("_rows", root, *args)
    assert rc == 0, err[-3000:]
    return {json.loads(l)["path"]: json.loads(l)["rows"] for l in out.splitlines() if l.strip()}


def duck_positions(rows, where):
    """Positions (0-based) of rows that `where` makes TRUE, by DuckDB."""
    if not rows:
        return []
    t = pa.Table.from_pylist([dict(r, __pos=i) for i, r in enumerate(rows)])
    con = duckdb.connect()
    con.register("t", t)
    return [r[0] for r in con.execute(f"SELECT __pos FROM t WHERE {where} ORDER BY __pos").fetchall()]


@pytest.fixture(scope="module")
def dv_tables():
    out = {}
    for table, _ in DV_CASES:
        root = h.testdata_dir() / table
        adds, metadata, _ = replay(root)
        schema = json.loads(metadata["schemaString"])
        pcols = set(metadata.get("partitionColumns") or [])
        expected = collections.Counter(
            canon(json.loads(l))
            for l in (h.testdata_dir() / (table + ".expected.jsonl")).read_text().splitlines()
            if l.strip())
        files = {}
        for add in adds:
            from urllib.parse import unquote
            files[unquote(add["path"])] = (add, read_rows(root, add, schema, pcols))
        every = collections.Counter(canon(r) for _, rows in files.values() for r in rows)
        assert max(every.values()) == 1, "rows of the table must be distinct for this oracle"
        out[table] = (root, files, expected)
    return out


@pytest.mark.dk_command("_rows")
@pytest.mark.parametrize("table,where", [(t, w) for t, ws in DV_CASES for w in [None, *ws]],
                         ids=lambda x: str(x))
@pytest.mark.parametrize("mode", ["rows", "batches"])
def test_file_reader_rows_match_duckdb(dv_tables, table, where, mode):
    root, files, expected = dv_tables[table]
    extra = (["--where", where] if where else []) + (["--batches"] if mode == "batches" else [])
    got = dk_rows(root, *extra)
    got_nodv = dk_rows(root, "--no-dv", *extra)
    assert set(got) == set(files)
    n_dv = n_deleted = 0
    for path, (add, rows) in files.items():
        pos = duck_positions(rows, where) if where else list(range(len(rows)))
        kept = {i for i, r in enumerate(rows) if canon(r) in expected}
        if add.get("deletionVector"):
            n_dv += 1
            n_deleted += len(rows) - len(kept)
            assert len(rows) - len(kept) == add["deletionVector"]["cardinality"], path
        else:
            assert len(kept) == len(rows), path
        assert got_nodv[path] == pos, path
        assert got[path] == [i for i in pos if i in kept], path
    assert n_dv > 0 and n_deleted > 0


# ---- many row groups and pages: row-group and page skipping must keep positions exact -------

N = 6000


@pytest.fixture(scope="module")
def page_table(tmp_path_factory):
    root = tmp_path_factory.mktemp("frpages") / "t"
    (root / "_delta_log").mkdir(parents=True)
    for name, batch in (("a.parquet", 100), ("b.parquet", 64)):
        ids = list(range(N))
        t = pa.table({
            "id": pa.array(ids, pa.int64()),
            "v": pa.array([None if i % 17 == 0 else (i * 7) % 1000 for i in ids], pa.int32()),
            "s": pa.array(["name-%06d" % i for i in ids]),
            "n": pa.array([None if i // 500 in (3, 4) else i for i in ids], pa.int64()),
        })
        pq.write_table(t, root / name, row_group_size=1500, write_page_index=True,
                       data_page_size=512, write_batch_size=batch)
    schema = {"type": "struct", "fields": [
        {"name": n, "type": ty, "nullable": True, "metadata": {}}
        for n, ty in [("id", "long"), ("v", "integer"), ("s", "string"), ("n", "long")]]}
    log = [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
           {"metaData": {"id": "fr", "format": {"provider": "parquet", "options": {}},
                         "schemaString": json.dumps(schema), "partitionColumns": [],
                         "configuration": {}, "createdTime": 0}}]
    for name in ("a.parquet", "b.parquet"):
        log.append({"add": {"path": name, "partitionValues": {}, "modificationTime": 0,
                            "size": (root / name).stat().st_size, "dataChange": True}})
    (root / "_delta_log" / ("0" * 20 + ".json")).write_text("\n".join(json.dumps(x) for x in log))
    return root


PAGE_WHERE = ["id BETWEEN 1234 AND 1300", "id < 150 OR id >= 5900", "n IS NULL",
              "s >= 'name-004000' AND s < 'name-004100' AND v IS NOT NULL", "v = 7",
              "n IS NOT NULL AND id >= 1400 AND id < 2600"]


@pytest.mark.dk_command("_rows")
@pytest.mark.parametrize("where", PAGE_WHERE)
@pytest.mark.parametrize("mode", ["rows", "batches"])
def test_file_reader_rows_with_page_skipping(page_table, where, mode):
    got = dk_rows(page_table, "--where", where, *(["--batches"] if mode == "batches" else []))
    con = duckdb.connect()
    for name in ("a.parquet", "b.parquet"):
        want = [r[0] for r in con.execute(
            f"SELECT file_row_number FROM read_parquet('{page_table / name}', "
            f"file_row_number=true) WHERE {where} ORDER BY 1").fetchall()]
        assert got[name] == want, name
