"""Oracle matrix for dk's Parquet reader: pyarrow writes files covering every type x codec x
dictionary on/off x data page v1/v2 x nulls (incl. all-null chunks) x nested list/map/struct
(empty lists, null elements, deep nesting) x long strings x several row groups and pages;
`dk parquet cat --format jsonl` must equal pyarrow's read of the same file, value by value."""
import datetime
import decimal
import random
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pq_oracle import compare_rows, dk_rows, expected_rows, run_dk

N = 600


def _maybe(rng, v, p=0.2):
    return None if rng.random() < p else v


def make_table(seed=1, n=N):
    rng = random.Random(seed)
    m = lambda v: _maybe(rng, v)  # noqa: E731
    big = "x" * 3000
    words = ["", "a", "hello", "ünïcødé ✓", "tab\tquote\"back\\slash\nnl", big]
    floats = [0.0, -0.0, 1.5, 0.1, 1e300, -2.5e-300, float("inf"), float("-inf"), float("nan"), 123456789.125]
    cols = {
        "b": pa.array([m(rng.random() < 0.5) for _ in range(n)], pa.bool_()),
        "i8": pa.array([m(rng.randint(-128, 127)) for _ in range(n)], pa.int8()),
        "i16": pa.array([m(rng.randint(-32768, 32767)) for _ in range(n)], pa.int16()),
        "i32": pa.array([m(rng.randint(-2**31, 2**31 - 1)) for _ in range(n)], pa.int32()),
        "i32_small": pa.array([rng.randint(0, 9) for _ in range(n)], pa.int32()),
        "i64": pa.array([m(rng.randint(-2**63, 2**63 - 1)) for _ in range(n)], pa.int64()),
        "u8": pa.array([m(rng.randint(0, 255)) for _ in range(n)], pa.uint8()),
        "u16": pa.array([m(rng.randint(0, 65535)) for _ in range(n)], pa.uint16()),
        "u32": pa.array([m(rng.randint(0, 2**32 - 1)) for _ in range(n)], pa.uint32()),
        "u64": pa.array([m(rng.randint(0, 2**64 - 1)) for _ in range(n)], pa.uint64()),
        "f32": pa.array([m(rng.choice(floats[:-2]) if rng.random() < 0.3 else rng.uniform(-1e6, 1e6)) for _ in range(n)], pa.float32()),
        "f64": pa.array([m(rng.choice(floats) if rng.random() < 0.3 else rng.uniform(-1e9, 1e9)) for _ in range(n)], pa.float64()),
        "s": pa.array([m(rng.choice(words) + str(rng.randint(0, 50))) for _ in range(n)], pa.string()),
        "s_req": pa.array([rng.choice(words[:4]) for _ in range(n)], pa.string()),
        "bin": pa.array([m(bytes(rng.randint(0, 255) for _ in range(rng.randint(0, 20)))) for _ in range(n)], pa.binary()),
        "fixed": pa.array([m(bytes(rng.randint(0, 255) for _ in range(5))) for _ in range(n)], pa.binary(5)),
        "dec9": pa.array([m(decimal.Decimal(rng.randint(-99999, 99999)).scaleb(-2)) for _ in range(n)], pa.decimal128(5, 2)),
        "dec18": pa.array([m(decimal.Decimal(rng.randint(-10**18 + 1, 10**18 - 1)).scaleb(-6)) for _ in range(n)], pa.decimal128(18, 6)),
        "dec38": pa.array([m(decimal.Decimal(rng.randint(-10**38 + 1, 10**38 - 1)).scaleb(-10)) for _ in range(n)], pa.decimal128(38, 10)),
        "date": pa.array([m(datetime.date(1, 1, 1) + datetime.timedelta(days=rng.randint(0, 3652058))) for _ in range(n)], pa.date32()),
        "t_ms": pa.array([m(rng.randint(0, 86399999)) for _ in range(n)], pa.time32("ms")),
        "t_us": pa.array([m(rng.randint(0, 86399999999)) for _ in range(n)], pa.time64("us")),
        "t_ns": pa.array([m(rng.randint(0, 86399999999999)) for _ in range(n)], pa.time64("ns")),
        "ts_ms": pa.array([m(rng.randint(-62135596800000, 253402300799999)) for _ in range(n)], pa.timestamp("ms", tz="UTC")),
        "ts_us": pa.array([m(rng.randint(-62135596800000000, 253402300799999999)) for _ in range(n)], pa.timestamp("us", tz="UTC")),
        "ts_ntz": pa.array([m(rng.randint(-2**50, 2**50)) for _ in range(n)], pa.timestamp("us")),
        "ts_ns": pa.array([m(rng.randint(-2**62, 2**62)) for _ in range(n)], pa.timestamp("ns", tz="UTC")),
        "all_null_i": pa.array([None] * n, pa.int64()),
        "all_null_s": pa.array([None] * n, pa.string()),
        "l_i32": pa.array([m([m(rng.randint(-5, 5)) for _ in range(rng.randint(0, 4))]) for _ in range(n)], pa.list_(pa.int32())),
        "l_s": pa.array([m([m(rng.choice(words)) for _ in range(rng.randint(0, 3))]) for _ in range(n)], pa.list_(pa.string())),
        "ll": pa.array([m([m([m(rng.randint(0, 9)) for _ in range(rng.randint(0, 3))]) for _ in range(rng.randint(0, 3))]) for _ in range(n)],
                       pa.list_(pa.list_(pa.int64()))),
        "st": pa.array([m({"a": m(rng.randint(0, 100)), "b": m({"c": m(rng.choice(words)), "d": m([m(rng.random()) for _ in range(rng.randint(0, 3))])})})
                        for _ in range(n)],
                       pa.struct([("a", pa.int32()), ("b", pa.struct([("c", pa.string()), ("d", pa.list_(pa.float64()))]))])),
        "m_s": pa.array([m([(f"k{j}", m(rng.randint(0, 1000))) for j in range(rng.randint(0, 3))]) for _ in range(n)], pa.map_(pa.string(), pa.int64())),
        "m_i": pa.array([m([(j, m(rng.choice(words[:4]))) for j in range(rng.randint(0, 3))]) for _ in range(n)], pa.map_(pa.int32(), pa.string())),
        "l_st": pa.array([m([m({"x": m(rng.randint(0, 9)), "y": m([(f"q{j}", m([rng.randint(0, 3)])) for j in range(rng.randint(0, 2))])})
                             for _ in range(rng.randint(0, 3))]) for _ in range(n)],
                         pa.list_(pa.struct([("x", pa.int16()), ("y", pa.map_(pa.string(), pa.list_(pa.int8())))]))),
        "uuid": pa.array([m(uuid.UUID(int=rng.getrandbits(128)).bytes) for _ in range(n)], pa.binary(16)).cast(pa.uuid()),
        "f16": pa.array([m(rng.choice([0.5, -2.0, 65504.0, 1e-3])) for _ in range(n)], pa.float32()).cast(pa.float16()),
    }
    return pa.table(cols)


CODECS = ["none", "snappy", "gzip", "zstd", "lz4", "brotli"]


@pytest.fixture(scope="module")
def table():
    return make_table()


def _check(path, **read_kw):
    exp = expected_rows(pq.read_table(path, **read_kw))
    compare_rows(exp, dk_rows(path))


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("dictionary", [True, False])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_matrix(tmp_path, table, codec, dictionary, version):
    path = tmp_path / f"m_{codec}_{dictionary}_{version}.parquet"
    pq.write_table(table, path, compression=codec, use_dictionary=dictionary, data_page_version=version,
                   row_group_size=250, data_page_size=2048, write_batch_size=100)
    assert pq.ParquetFile(path).metadata.num_row_groups == 3
    _check(path)


ENCODED = {
    "i32": "DELTA_BINARY_PACKED", "i64": "DELTA_BINARY_PACKED", "i32_small": "DELTA_BINARY_PACKED",
    "u32": "DELTA_BINARY_PACKED", "u64": "DELTA_BINARY_PACKED", "date": "DELTA_BINARY_PACKED",
    "ts_us": "DELTA_BINARY_PACKED", "t_ms": "DELTA_BINARY_PACKED",
    "s": "DELTA_BYTE_ARRAY", "s_req": "DELTA_LENGTH_BYTE_ARRAY", "bin": "DELTA_LENGTH_BYTE_ARRAY",
    "fixed": "DELTA_BYTE_ARRAY", "dec38": "DELTA_BYTE_ARRAY",
    "f32": "BYTE_STREAM_SPLIT", "f64": "BYTE_STREAM_SPLIT", "dec18": "BYTE_STREAM_SPLIT",
    "i16": "BYTE_STREAM_SPLIT", "f16": "BYTE_STREAM_SPLIT", "b": "RLE",
}


@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_encodings(tmp_path, table, version, codec):
    path = tmp_path / f"enc_{version}_{codec}.parquet"
    pq.write_table(table, path, compression=codec, use_dictionary=False, column_encoding=ENCODED,
                   data_page_version=version, row_group_size=250, data_page_size=1024, write_batch_size=64)
    md = pq.ParquetFile(path).metadata
    encs = {e for rg in range(md.num_row_groups) for c in range(md.num_columns) for e in md.row_group(rg).column(c).encodings}
    assert {"DELTA_BINARY_PACKED", "DELTA_BYTE_ARRAY", "DELTA_LENGTH_BYTE_ARRAY", "BYTE_STREAM_SPLIT"} <= encs
    _check(path)


def test_int96(tmp_path):
    vals = [datetime.datetime(1, 1, 1), datetime.datetime(1970, 1, 1, 0, 0, 0, 1), None,
            datetime.datetime(9999, 12, 31, 23, 59, 59, 999999), datetime.datetime(1582, 10, 4, 12)]
    t = pa.table({"ts": pa.array(vals * 50, pa.timestamp("us"))})
    for dictionary in (True, False):
        path = tmp_path / f"int96_{dictionary}.parquet"
        pq.write_table(t, path, use_deprecated_int96_timestamps=True, use_dictionary=dictionary)
        assert pq.ParquetFile(path).schema.column(0).physical_type == "INT96"
        exp = expected_rows(pq.read_table(path, coerce_int96_timestamp_unit="us"), utc_columns={"ts"})
        compare_rows(exp, dk_rows(path))


def test_empty_and_single_row_groups(tmp_path, table):
    path = tmp_path / "empty.parquet"
    pq.write_table(table.slice(0, 0), path)
    assert dk_rows(path) == []
    path = tmp_path / "one.parquet"
    pq.write_table(table.slice(5, 1), path)
    _check(path)


def test_batch_sizes(tmp_path, table):
    path = tmp_path / "b.parquet"
    pq.write_table(table, path, row_group_size=400, data_page_size=512, write_batch_size=50)
    exp = expected_rows(pq.read_table(path))
    for bs in ("1", "7", "333"):
        compare_rows(exp, dk_rows(path, "--batch-size", bs))


def test_projection(tmp_path, table):
    path = tmp_path / "p.parquet"
    pq.write_table(table, path, row_group_size=250)
    got = dk_rows(path, "--columns", "s,i64,st.b.c")
    full = pq.read_table(path)
    exp = expected_rows(full.select(["s", "i64"]))
    # a nested path keeps the enclosing structs, pruned to the selected field
    full_rows = expected_rows(full.select(["st"]))
    for e, f in zip(exp, full_rows):
        st = f["st"]
        e["st"] = None if st is None else {"b": None if st["b"] is None else {"c": st["b"]["c"]}}
    compare_rows(exp, got)
    got = dk_rows(path, "--row-groups", "1")
    compare_rows(expected_rows(pq.ParquetFile(path).read_row_group(1)), got)


def test_threads_and_mmap(tmp_path, table):
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, compression="zstd", row_group_size=250, data_page_size=1024)
    exp = expected_rows(pq.read_table(path))
    compare_rows(exp, dk_rows(path, "--threads", "3", "--batch-size", "100"))
    compare_rows(exp, dk_rows(path, "--mmap", "--threads", "2"))


def test_meta_and_page_index(tmp_path, table):
    """`dk parquet meta` against pyarrow's metadata: row groups, chunk offsets, null counts,
    and the page index (OffsetIndex/ColumnIndex) consistent with them."""
    import json as _json
    from pq_oracle import run_dk
    path = tmp_path / "pi.parquet"
    pq.write_table(table.select(["i64", "s", "l_i32", "st"]), path, write_page_index=True,
                   data_page_size=1024, row_group_size=250)
    r = run_dk("parquet", "meta", str(path))
    assert r.returncode == 0, r.stderr
    meta = _json.loads(r.stdout)
    md = pq.ParquetFile(path).metadata
    assert meta["num_rows"] == md.num_rows and len(meta["row_groups"]) == md.num_row_groups
    for g, rg in enumerate(meta["row_groups"]):
        prg = md.row_group(g)
        assert rg["num_rows"] == prg.num_rows
        assert len(rg["columns"]) == prg.num_columns
        for c, col in enumerate(rg["columns"]):
            pc = prg.column(c)
            assert col["path"] == pc.path_in_schema
            assert col["data_page_offset"] == pc.data_page_offset
            assert col["compressed_size"] == pc.total_compressed_size
            assert col["num_values"] == pc.num_values
            if pc.statistics is not None and pc.statistics.has_null_count:
                assert col["statistics"]["null_count"] == pc.statistics.null_count
            pages = col["pages"]
            assert pages[0]["offset"] == pc.data_page_offset and pages[0]["first_row"] == 0
            assert all(a["first_row"] < b["first_row"] < prg.num_rows for a, b in zip(pages, pages[1:]))
            if "null_count" in col["column_index"]:
                assert col["column_index"]["null_count"] == pc.statistics.null_count
            assert col["column_index"]["pages"] == len(pages)


def test_field_ids_and_range(tmp_path):
    fid = lambda i: {b"PARQUET:field_id": str(i).encode()}  # noqa: E731
    schema = pa.schema([
        pa.field("a", pa.int64(), metadata=fid(1)),
        pa.field("s", pa.struct([pa.field("x", pa.int32(), metadata=fid(3)),
                                 pa.field("y", pa.string(), metadata=fid(4))]), metadata=fid(2)),
        pa.field("c", pa.string(), metadata=fid(5)),
    ])
    n = 1000
    t = pa.table([pa.array(range(n), pa.int64()),
                  pa.array([{"x": i, "y": str(i)} if i % 3 else None for i in range(n)], schema.field("s").type),
                  pa.array([f"c{i}" for i in range(n)])], schema=schema)
    path = tmp_path / "fid.parquet"
    pq.write_table(t, path, row_group_size=300)
    full = expected_rows(pq.read_table(path))
    got = dk_rows(path, "--field-ids", "5,4")
    exp = [{"c": r["c"], "s": None if r["s"] is None else {"y": r["s"]["y"]}} for r in full]
    compare_rows(exp, got)
    # byte ranges: splitting the file anywhere partitions its rows (the split rule)
    size = path.stat().st_size
    md = pq.ParquetFile(path).metadata
    for cut in (4, size // 3, size // 2, size - 1):
        a = dk_rows(path, "--range", f"0,{cut}", "--columns", "a")
        b = dk_rows(path, "--range", f"{cut},{size}", "--columns", "a")
        assert sorted(r["a"] for r in a + b) == list(range(n))
        assert len(a) in {sum(md.row_group(g).num_rows for g in range(k)) for k in range(md.num_row_groups + 1)}


def test_projection_inside_lists(tmp_path, table):
    path = tmp_path / "pl.parquet"
    pq.write_table(table.select(["l_st", "st", "i32"]), path, row_group_size=200)
    full = expected_rows(pq.read_table(path))

    def prune_list(v):
        return None if v is None else [None if e is None else {"x": e["x"]} for e in v]

    exp = [{"l_st": prune_list(r["l_st"])} for r in full]
    compare_rows(exp, dk_rows(path, "--columns", "l_st.x"))
    compare_rows(exp, dk_rows(path, "--columns", "l_st.element.x"))
    exp = [{"l_st": r["l_st"], "i32": r["i32"]} for r in full]
    compare_rows(exp, dk_rows(path, "--columns", "l_st.y,l_st.x,i32"))  # both fields: whole element
    r = run_dk("parquet", "cat", str(path), "--columns", "i32.nope")
    assert r.returncode == 1 and b"not found" in r.stderr


def test_table_and_csv_formats_span_batches(tmp_path):
    """TABLE output aligns its columns over all batches (not batch by batch) and CSV keeps one
    header: many small row groups, the widest values in the last one; cells equal pyarrow's."""
    import csv
    import io
    n = 50
    words = ["x" * (i // 10 + 1) for i in range(n)]
    t = pa.table({"id": pa.array(range(n), pa.int64()), "w": pa.array(words)})
    p = tmp_path / "t.parquet"
    pq.write_table(t, p, row_group_size=7)
    assert pq.ParquetFile(p).metadata.num_row_groups > 1
    want = [[str(a), b] for a, b in zip(t.column("id").to_pylist(), t.column("w").to_pylist())]

    r = run_dk("parquet", "cat", str(p), "--format", "table")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.decode().splitlines()
    assert len(lines) == n + 2 and set(lines[1]) <= {"-", "+"}
    assert len({len(x) for x in lines}) == 1, "columns not aligned across batches"
    assert [[c.strip() for c in x.split(" | ")] for x in lines[2:]] == want
    assert [c.strip() for c in lines[0].split(" | ")] == ["id", "w"]

    r = run_dk("parquet", "cat", str(p), "--format", "csv")
    assert r.returncode == 0, r.stderr
    assert list(csv.reader(io.StringIO(r.stdout.decode()))) == [["id", "w"]] + want
