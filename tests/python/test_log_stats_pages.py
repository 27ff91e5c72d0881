"""Stats of checkpoint files kept as stored Parquet pages (src/codec/parquet/pages.c,
src/log/checkpoint_parquet.c): dk keeps the pages of a checkpoint's add.stats column compressed
and decodes one page when a file's stats are asked for. The P1 synthetic table's checkpoint is
rewritten with pyarrow in several page layouts (many small pages, dictionary and PLAIN pages,
data page v1 and v2, snappy / zstd / gzip / uncompressed, stats null on some add rows, several
row groups); the oracle is pyarrow's own read of add.stats: `dk files --json --version 100`
must give each checkpoint file exactly the stats text pyarrow reads for its row (and none
where pyarrow reads null). A second check at the latest version compares against delta-rs."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pc = pytest.importorskip("pyarrow.compute")

ROOT = Path(__file__).resolve().parents[2]
DK = ROOT / os.environ.get("DK_BUILD", "build") / "dk"
sys.path.insert(0, str(ROOT / "bench"))

CKPT = "00000000000000000100.checkpoint.parquet"

LAYOUTS = {
    # the dictionary outgrows its limit: dictionary pages, then PLAIN pages in one chunk
    "dict-v1-snappy-small-pages": dict(compression="snappy", use_dictionary=True,
                                       data_page_size=2048, data_page_version="1.0",
                                       dictionary_pagesize_limit=20000),
    "plain-v1-zstd": dict(compression="zstd", use_dictionary=False, data_page_size=8192,
                          data_page_version="1.0"),
    "dict-v2-gzip": dict(compression="gzip", use_dictionary=True, data_page_size=256,
                         data_page_version="2.0", dictionary_pagesize_limit=1 << 24),
    "plain-v2-none-rowgroups": dict(compression="none", use_dictionary=False,
                                    data_page_size=4096, data_page_version="2.0",
                                    row_group_size=700),
}


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    import snapshot_load
    root = tmp_path_factory.mktemp("p1") / "t"
    snapshot_load.make_table(root, 2000, seed=5)
    return root


def null_some_stats(table):
    """add.stats null on every 7th row (the add struct itself untouched)."""
    add = table.column("add").combine_chunks()
    stats = add.field("stats")
    n = len(stats)
    mask = pa.array([i % 7 == 3 for i in range(n)])
    stats = pc.if_else(mask, pa.nulls(n, stats.type), stats)
    fields = [add.type.field(i) for i in range(add.type.num_fields)]
    arrays = [stats if f.name == "stats" else add.field(i) for i, f in enumerate(fields)]
    new = pa.StructArray.from_arrays(arrays, fields=fields, mask=add.is_null())
    return table.set_column(table.schema.get_field_index("add"), table.schema.field("add"), new)


def dk_files(root, version=None):
    args = [str(DK), "files", str(root), "--json"]
    if version is not None:
        args += ["--version", str(version)]
    p = subprocess.run(args, capture_output=True, text=True, check=True)
    return json.loads(p.stdout)


@pytest.mark.skipif(not DK.exists(), reason="dk not built")
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_checkpoint_stats_pages_match_pyarrow(base, tmp_path, layout):
    root = tmp_path / "t"
    shutil.copytree(base, root)
    ck = root / "_delta_log" / CKPT
    table = null_some_stats(pq.read_table(ck))
    # pyarrow checks the page size every write_batch_size values: small batches, many pages
    pq.write_table(table, ck, write_batch_size=40, **LAYOUTS[layout])
    (root / "_delta_log" / "_last_checkpoint").unlink()
    # the oracle: pyarrow's read of the rewritten file
    rows = pq.read_table(ck, columns=["add"]).column("add").to_pylist()
    want = {a["path"]: a["stats"] for a in rows if a is not None}
    assert any(v is None for v in want.values())
    md = pq.ParquetFile(ck).metadata
    col = [md.row_group(0).column(i) for i in range(md.num_columns)
           if md.row_group(0).column(i).path_in_schema == "add.stats"][0]
    if LAYOUTS[layout]["use_dictionary"]:
        assert col.has_dictionary_page
    if layout.startswith("dict-v1"):
        assert "PLAIN" in col.encodings and "RLE_DICTIONARY" in col.encodings
    got = dk_files(root, 100)
    assert got["version"] == 100
    assert len(got["files"]) == len(want)
    for f in got["files"]:
        assert f["path"] in want
        assert f.get("stats") == want[f["path"]], f["path"]


@pytest.mark.skipif(not DK.exists(), reason="dk not built")
def test_latest_numrecords_match_delta_rs(base, tmp_path):
    deltalake = pytest.importorskip("deltalake")
    root = tmp_path / "t"
    shutil.copytree(base, root)
    ck = root / "_delta_log" / CKPT
    pq.write_table(pq.read_table(ck), ck, write_batch_size=40,
                   **LAYOUTS["dict-v1-snappy-small-pages"])
    (root / "_delta_log" / "_last_checkpoint").unlink()
    a = pa.table(deltalake.DeltaTable(str(root)).get_add_actions(flatten=True)).to_pydict()
    want = sorted(zip(a["path"], (int(n) for n in a["num_records"])))
    got = sorted((f["path"], json.loads(f["stats"])["numRecords"])
                 for f in dk_files(root)["files"])
    assert got == want


@pytest.mark.skipif(not DK.exists(), reason="dk not built")
@pytest.mark.parametrize("layout", ["plain-v2-none-rowgroups", "dict-v1-snappy-small-pages"])
def test_corrupt_stats_page_is_an_error(base, tmp_path, layout):
    """Bytes of the add.stats chunk overwritten: dk must fail cleanly (no crash) with an error
    naming a byte offset, whether the damage hits a page header (at load) or a page body
    (when the stats are read)."""
    root = tmp_path / "t"
    shutil.copytree(base, root)
    ck = root / "_delta_log" / CKPT
    pq.write_table(pq.read_table(ck), ck, write_batch_size=40, **LAYOUTS[layout])
    (root / "_delta_log" / "_last_checkpoint").unlink()
    md = pq.ParquetFile(ck).metadata
    failures = 0
    for k in range(md.num_columns):
        c = md.row_group(0).column(k)
        if c.path_in_schema != "add.stats":
            continue
        start = c.dictionary_page_offset or c.data_page_offset
        data = bytearray(ck.read_bytes())
        import random
        rng = random.Random(7)
        for j in range(24):
            bad = bytearray(data)
            at = start + rng.randrange(c.total_compressed_size)
            width = 64 if j < 3 else rng.choice([1, 2, 4, 8])
            bad[at:at + width] = (b"\xff" * 64 if j < 3 else rng.randbytes(width))
            ck.write_bytes(bytes(bad))
            p = subprocess.run([str(DK), "files", str(root), "--json", "--version", "100"],
                               capture_output=True, text=True, errors="replace")
            assert p.returncode >= 0, p.stderr  # not killed by a signal
            assert "Sanitizer" not in p.stderr and "runtime error" not in p.stderr, p.stderr
            if p.returncode != 0:
                failures += 1
                assert "offset" in p.stderr, p.stderr
        ck.write_bytes(bytes(data))
    assert failures > 0
