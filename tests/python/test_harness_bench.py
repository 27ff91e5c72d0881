"""Quick checks of the benchmark framework and its input generators (bench/), on tiny inputs.

The benchmarks themselves never run here. Oracles: delta-rs reads the synthetic Delta table;
the checkpoint schema is compared with the one a Delta-Spark writer recorded in the golden
table `checkpoint/_delta_log/_last_checkpoint`; pyarrow reads the generated lineitem file.
"""

import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import dkharness as h

sys.path.insert(0, str(h.REPO_ROOT / "bench"))

import parquet_decode  # noqa: E402
import run as bench_run  # noqa: E402
import snapshot_load  # noqa: E402


def test_lineitem_generator_shape_and_determinism(tmp_path):
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    parquet_decode.make_lineitem(a, rows=5000)
    parquet_decode.make_lineitem(b, rows=5000)
    ta, tb = pq.read_table(a), pq.read_table(b)
    assert ta.equals(tb)
    assert ta.num_rows == 5000 and ta.num_columns == 16
    types = {f.name: f.type for f in ta.schema}
    assert types["l_orderkey"] == pa.int64() and types["l_linenumber"] == pa.int32()
    assert types["l_quantity"] == pa.decimal128(15, 2) and types["l_shipdate"] == pa.date32()
    lens = pc.min_max(pc.utf8_length(ta["l_comment"])).as_py()
    assert lens["min"] >= 27 and lens["max"] <= 43
    qty = h.canon_arrow_array(ta["l_quantity"])
    assert all(q.endswith(".00") and 1 <= int(q[:-3]) <= 50 for q in qty)
    assert pq.ParquetFile(a).metadata.row_group(0).column(0).compression == "SNAPPY"


def _to_delta(t):
    """Delta schema JSON of an Arrow type (only what the checkpoint schema uses)."""
    if pa.types.is_struct(t):
        return {"type": "struct", "fields": [{"name": f.name, "type": _to_delta(f.type)}
                                             for f in t]}
    if pa.types.is_map(t):
        return {"type": "map", "keyType": _to_delta(t.key_type),
                "valueType": _to_delta(t.item_type)}
    if pa.types.is_list(t):
        return {"type": "array", "elementType": _to_delta(t.value_type)}
    return {pa.string(): "string", pa.int64(): "long", pa.int32(): "integer",
            pa.bool_(): "boolean"}[t]


def _strip(d):
    if isinstance(d, dict):
        return {k: _strip(v) for k, v in d.items()
                if k not in ("nullable", "metadata", "containsNull", "valueContainsNull")}
    if isinstance(d, list):
        return [_strip(x) for x in d]
    return d


def test_checkpoint_schema_matches_delta_spark():
    lc = json.loads((h.testdata_dir() / "delta-golden/checkpoint/_delta_log/_last_checkpoint")
                    .read_text())
    spark = _strip(lc["checkpointSchema"])
    ours = {"type": "struct", "fields": [{"name": f.name, "type": _to_delta(f.type)}
                                         for f in snapshot_load._checkpoint_arrow_schema()]}
    assert ours == spark


def test_snapshot_generator_is_read_by_delta_rs(tmp_path):
    from deltalake import DeltaTable
    root = tmp_path / "t"
    facts = snapshot_load.make_table(root, 1000)
    assert facts["live_files"] == 1000
    dt = DeltaTable(str(root))
    assert dt.version() == snapshot_load.CHECKPOINT_VERSION + snapshot_load.N_COMMITS
    adds = pa.table(dt.get_add_actions(flatten=True))
    assert adds.num_rows == 1000
    assert len(set(adds.column("path").to_pylist())) == 1000
    # every live path is dated by its partition value, stats were parsed
    for p, d, n in zip(adds["path"].to_pylist(), adds["partition.date"].to_pylist(),
                       adds["num_records"].to_pylist()):
        assert p.startswith(f"date={d}/") and n > 0
    # removed files are gone: the checkpoint's adds minus 100 commits' removes
    removed = set()
    for f in sorted((root / "_delta_log").glob("*.json")):
        for line in f.read_text().splitlines():
            a = json.loads(line)
            if "remove" in a:
                removed.add(a["remove"]["path"])
    assert len(removed) == 500 and not removed & set(adds["path"].to_pylist())


def test_measure_ratios_and_pending(tmp_path):
    ctx = bench_run.Ctx(build=tmp_path, repeats=3, warmup=1, threads=[1], systems=None,
                        sizes=None, timeout=30)
    py = sys.executable
    fast = bench_run.Run("dk", "v", 1, [py, "-c",
                                         'print(\'{"seconds": 0.5, "rows": 7}\')'])
    slow = bench_run.Run("other", "v", 1, [py, "-c",
                                            'print(\'{"seconds": 1.0, "rows": 7}\')'])
    faster = bench_run.Run("third", "v", 1, [py, "-c",
                                              'print(\'{"seconds": 0.25, "rows": 7}\')'])
    pend = bench_run.Run("dk", "w", 1, [py, "-c", 'import sys; print(\'{"status": "pending", '
                                                  '"reason": "later"}\'); sys.exit(3)'])
    bad = bench_run.Run("x", "v", 1, [py, "-c", 'import sys; sys.exit("boom")'])
    res = [bench_run.measure(r, ctx) for r in (fast, slow, faster, pend, bad)]
    assert [r.status for r in res] == ["ok", "ok", "ok", "pending", "error"]
    assert res[0].median_s == 0.5 and res[0].repeats == 3 and res[0].rows == 7
    assert res[0].peak_rss_mib > 1 and res[0].cpu_median_s is not None
    assert res[3].reason == "later" and "boom" in res[4].reason
    bench_run.add_ratios(res)
    assert res[1].vs_dk == "dk is 2.00× faster than other"
    assert res[2].vs_dk == "dk is 2.00× slower than third"
    md = bench_run.render_table(res)
    assert "**pending**: later" in md and "dk is 2.00× faster than other" in md


def test_run_process_reports_wall_and_rss():
    p = bench_run.run_process([sys.executable, "-c", "x = bytearray(64 << 20); print('{}')"],
                              timeout=30)
    assert p["rc"] == 0 and p["json"] == {} and p["maxrss_kb"] > 64 * 1024


def test_bench_cli_lists_benchmarks(capsys):
    assert bench_run.main(["--list"]) == 0
    out = capsys.readouterr().out
    assert "parquet_decode" in out and "snapshot_load" in out
    with pytest.raises(SystemExit):
        bench_run.main(["no_such_benchmark", "--no-write"])


@pytest.mark.dk_command("files")
def test_dk_files_lists_the_synthetic_table_like_delta_rs(tmp_path):
    """The snapshot_load input read by dk: same live paths as delta-rs (the oracle)."""
    from deltalake import DeltaTable
    root = tmp_path / "t"
    snapshot_load.make_table(root, 1000)
    rc, out, err = h.run_dk("files", root, "--json")
    assert rc == 0, err
    got = sorted(f["path"] for f in json.loads(out)["files"])
    want = sorted(pa.table(DeltaTable(str(root)).get_add_actions(flatten=True))
                  .column("path").to_pylist())
    assert got == want
    assert snapshot_load.dk_file_count(str(h.dk_binary()), str(root)) == 1000
