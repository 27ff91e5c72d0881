"""Oracle matrix of dk's Parquet writer (issue #13): random tables (pq_write_gen) written by
dk.write_parquet with random options (codec x dictionary x page v1/v2 x page/row-group sizes x
threads), then read back by pyarrow, DuckDB and dk itself, which must each return exactly the
input; pyarrow's ParquetFile metadata (column statistics per row group, page index presence,
field ids, key/value metadata) must be what the Parquet spec requires for those rows.

Sampled in `make test` (DK_PQ_WRITE_CASES, default 150 seeds); DK_PQ_WRITE_FULL=1 runs 3000.
"""
import decimal
import math
import os

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from test_py_support import import_dk  # noqa: E402
dk = import_dk()
import pq_oracle
from pq_write_gen import FLAT, NESTED, first_diff, random_params, random_table

N_CASES = int(os.environ.get("DK_PQ_WRITE_CASES", "3000" if os.environ.get("DK_PQ_WRITE_FULL") else "150"))


def _expected_pylist(arr):
    t = arr.type
    if pa.types.is_string_view(t):
        arr = arr.cast(pa.string())
    if pa.types.is_timestamp(t) and t.unit != "us":
        arr = arr.cast(pa.timestamp("us", t.tz))
    return arr.to_pylist()


def _norm_duck(v):
    """DuckDB returns maps as lists of {key, value} dicts in some versions: normalise both."""
    if isinstance(v, dict) and set(v) == {"key", "value"}:
        return (_norm_duck(v["key"]), _norm_duck(v["value"]))
    if isinstance(v, tuple):
        return tuple(_norm_duck(x) for x in v)
    if isinstance(v, list):
        return [_norm_duck(x) for x in v]
    if isinstance(v, dict):
        return {k: _norm_duck(x) for k, x in v.items()}
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    return v


def _write(tmp_path, seed):
    table, info = random_table(seed)
    params = random_params(seed)
    path = tmp_path / f"case{seed}.parquet"
    res = dk.write_parquet(path, table, **params)
    assert res["num_rows"] == table.num_rows
    assert res["file_size"] == path.stat().st_size
    return table, params, path, res


def _check_stats(table, path, params):
    f = pq.ParquetFile(path)
    md = f.metadata
    assert md.num_rows == table.num_rows
    assert md.created_by.startswith("dk version")
    off = 0
    rg_limit = params.get("row_group_size")
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        assert rg.num_rows > 0
        if rg_limit:
            assert rg.num_rows <= rg_limit
        sl = table.slice(off, rg.num_rows)
        off += rg.num_rows
        for ci in range(rg.num_columns):
            col = rg.column(ci)
            assert col.has_offset_index, (g, ci)
            path_parts = col.path_in_schema.split(".")
            name = path_parts[0]
            arr = sl.column(name).combine_chunks()
            if pa.types.is_string_view(arr.type):
                arr = arr.cast(pa.string())
            if len(path_parts) != 1:
                continue  # nested leaves: the read-back checks cover them
            st = col.statistics
            assert st is not None and st.has_null_count
            assert st.null_count == arr.null_count, (name, g)
            t = arr.type
            valid = pc.drop_null(arr)
            if pa.types.is_floating(t):
                valid = pc.filter(valid, pc.invert(pc.is_nan(valid)))
            if len(valid) == 0:
                assert not st.has_min_max, (name, g)
                continue
            if pa.types.is_fixed_size_binary(t) or pa.types.is_binary(t) or pa.types.is_string(t) \
                    or pa.types.is_large_string(t) or pa.types.is_string_view(t):
                vals = [v if isinstance(v, bytes) else v.encode() for v in valid.to_pylist()]
                exp_min, exp_max = min(vals), max(vals)
                if max(len(exp_min), len(exp_max)) > 4096:  # too long for the footer: left out
                    assert not st.has_min_max
                    continue
                got_min = st.min if isinstance(st.min, bytes) else st.min.encode()
                got_max = st.max if isinstance(st.max, bytes) else st.max.encode()
                assert (got_min, got_max) == (exp_min, exp_max), (name, g)
                continue
            assert st.has_min_max, (name, g)
            mm = pc.min_max(valid).as_py()
            exp_min, exp_max = mm["min"], mm["max"]
            if pa.types.is_timestamp(t) and t.unit == "ms":
                pass  # compared as datetimes below
            got_min, got_max = st.min, st.max
            if pa.types.is_floating(t):
                # zero bounds: -0.0 min, +0.0 max (parquet.thrift ColumnOrder rules)
                if exp_min == 0:
                    assert math.copysign(1, got_min) == -1
                if exp_max == 0:
                    assert math.copysign(1, got_max) == 1
                assert got_min == exp_min and got_max == exp_max, (name, g)
                continue
            if isinstance(exp_min, decimal.Decimal):
                assert decimal.Decimal(got_min) == exp_min and decimal.Decimal(got_max) == exp_max
                continue
            if hasattr(got_min, "tzinfo") and got_min.tzinfo is None and getattr(exp_min, "tzinfo", None):
                exp_min, exp_max = exp_min.replace(tzinfo=None), exp_max.replace(tzinfo=None)
            assert (got_min, got_max) == (exp_min, exp_max), (name, g, got_min, exp_min)


@pytest.mark.parametrize("seed", range(N_CASES))
def test_write_matrix(tmp_path, seed):
    table, params, path, res = _write(tmp_path, seed)
    # pyarrow
    back = pq.read_table(path)
    assert back.column_names == table.column_names
    for name in table.column_names:
        d = first_diff(_expected_pylist(table.column(name).combine_chunks()),
                       back.column(name).to_pylist())
        assert d is None, (name, params, d)
    # field ids
    sch = pq.read_schema(path)
    for fld in table.schema:
        want = (fld.metadata or {}).get(b"PARQUET:field_id")
        got = (sch.field(fld.name).metadata or {}).get(b"PARQUET:field_id")
        assert want == got, fld.name
    _check_stats(table, path, params)
    # DuckDB (seeds spread over the matrix; its read is the slowest)
    if seed % 3 == 0:
        import duckdb
        con = duckdb.connect()
        got = con.sql(f"SELECT * FROM read_parquet('{path}')").arrow()
        got = got.read_all() if hasattr(got, "read_all") else got
        for name in table.column_names:
            exp = [_norm_duck(v) for v in _expected_pylist(table.column(name).combine_chunks())]
            act = [_norm_duck(v) for v in got.column(name).to_pylist()]
            if pa.types.is_timestamp(table.schema.field(name).type) and table.schema.field(name).type.tz:
                act = [v.astimezone(exp[0].tzinfo) if v is not None and exp and exp[0] is not None else v
                       for v in act]
                exp = [v for v in exp]
            d = first_diff(exp, act)
            if d is not None and pa.types.is_timestamp(table.schema.field(name).type):
                # compare instants for zoned timestamps (DuckDB may attach the local zone)
                d = first_diff([v.timestamp() if v is not None else None for v in exp],
                               [v.timestamp() if v is not None else None for v in act])
            assert d is None, ("duckdb", name, params, d)
    # dk reads its own file (flat columns; the nested print format is covered by the pyarrow read)
    if seed % 2 == 0:
        flat = [n for n in table.column_names if not any(n.endswith("_" + k) for k in NESTED)]
        if flat and table.num_rows:
            rows = pq_oracle.dk_rows(path, "--columns", ",".join(flat))
            pq_oracle.compare_rows(pq_oracle.expected_rows(back.select(flat)), rows)


def test_all_types_one_file(tmp_path):
    """Every type in one file, every null mode, through all three readers."""
    for mode in ("none", "some", "all"):
        table, _ = random_table(4242, rows=3000, kinds=FLAT + NESTED, null_mode=mode)
        path = tmp_path / f"all_{mode}.parquet"
        dk.write_parquet(path, table, page_rows=100, row_group_size=1000)
        back = pq.read_table(path)
        for name in table.column_names:
            assert first_diff(_expected_pylist(table.column(name).combine_chunks()),
                              back.column(name).to_pylist()) is None, (mode, name)
        md = pq.ParquetFile(path).metadata
        assert md.num_row_groups == 3


def test_sources(tmp_path):
    """Polars, DuckDB, a RecordBatchReader and a bare RecordBatch all go in."""
    import duckdb
    import polars as pl
    t = pa.table({"a": [1, 2, None], "s": ["x", None, "y"]})
    for name, src in [("table", t), ("reader", t.to_reader()), ("batch", t.to_batches()[0]),
                      ("polars", pl.from_arrow(t)),
                      ("duckdb", duckdb.connect().sql("SELECT * FROM t"))]:
        p = tmp_path / f"{name}.parquet"
        r = dk.write_parquet(p, src)
        assert r["num_rows"] == 3, name
        back = pq.read_table(p)
        assert back.column("a").to_pylist() == [1, 2, None], name
        assert back.column("s").to_pylist() == ["x", None, "y"], name


def test_metadata_and_options(tmp_path):
    t = pa.table({"a": pa.array(range(100000), pa.int64()), "s": pa.array([str(i % 7) for i in range(100000)])})
    p = tmp_path / "kv.parquet"
    dk.write_parquet(p, t, metadata={"k": "v", "delta": "x"}, compression="zstd",
                     data_page_version="2.0", row_group_size=30000)
    f = pq.ParquetFile(p)
    assert f.metadata.metadata[b"k"] == b"v"
    assert f.metadata.num_row_groups == 4
    c = f.metadata.row_group(0).column(1)
    assert c.compression == "ZSTD"
    assert c.has_dictionary_page and "RLE_DICTIONARY" in c.encodings
    assert c.has_column_index and c.has_offset_index
    # default page size target: 20000 rows a page -> 2 pages in a 30000-row group
    assert pq.read_table(p).equals(t)


def test_dictionary_fallback(tmp_path):
    vals = [f"value-{i:08d}" for i in range(200000)]
    t = pa.table({"s": vals})
    p = tmp_path / "fb.parquet"
    dk.write_parquet(p, t, dictionary_bytes=100000)
    c = pq.ParquetFile(p).metadata.row_group(0).column(0)
    assert "PLAIN" in c.encodings and "RLE_DICTIONARY" in c.encodings
    assert pq.read_table(p).column("s").to_pylist() == vals


def test_errors_leave_no_file(tmp_path):
    p = tmp_path / "bad.parquet"
    with pytest.raises(dk.UnsupportedFeature, match="uint32"):
        dk.write_parquet(p, pa.table({"u": pa.array([1], pa.uint32())}))
    assert not p.exists()
    with pytest.raises(dk.UnsupportedFeature, match="timestamp"):
        dk.write_parquet(p, pa.table({"t": pa.array([1], pa.timestamp("ns"))}))
    assert not p.exists()
    sch = pa.schema([pa.field("a", pa.int64(), nullable=False)])
    bad = pa.Table.from_arrays([pa.array([1, None])], schema=pa.schema([pa.field("a", pa.int64())]))
    with pytest.raises(dk.InvalidArgument, match="not nullable"):
        dk.write_parquet(p, pa.RecordBatchReader.from_batches(sch, bad.to_batches()))
    assert not p.exists()
    with pytest.raises(dk.InvalidArgument, match="compression"):
        dk.write_parquet(p, pa.table({"a": [1]}), compression="lzo")
    assert not list(tmp_path.iterdir())
