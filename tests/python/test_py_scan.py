"""dk Python binding: scans as Arrow PyCapsule streams, consumed by pyarrow, DuckDB and Polars.

Oracle: the expected rows of every read case of the shared corpus manifest (written from the
upstream Delta tests, cross-checked with Spark and an independent reader), and the formula
aggregates of the 1M-row summary cases.
"""

import ctypes
import gc
import json
import threading
import time

import pytest

import dkharness
import variant_decode
from test_py_support import import_dk, read_cases

dk = import_dk()
pa = pytest.importorskip("pyarrow")


TESTDATA = dkharness.testdata_dir()
READ = [pytest.param(c, id=c["id"]) for c in read_cases()]
SUMMARY = [pytest.param(c, id=c["id"]) for c in dkharness.cases("read-summary")
           if not c.get("incomplete")]


def _snapshot(case):
    t = dk.Table(str(dkharness.table_path(case)))
    return t.snapshot(version=case["version"]) if case["version"] is not None else t.snapshot()


def _scan(case):
    """The case's scan; xfail (not pass) where dk says it cannot read the table yet."""
    try:
        return _snapshot(case).scan(**_scan_args(case))
    except dk.UnsupportedFeature as e:
        pytest.xfail(f"dk: {e}")


def _scan_args(case):
    kw = {}
    if case.get("columns", "all") != "all":
        kw["columns"] = list(case["columns"])
    if case.get("filter"):
        kw["filter"] = case["filter"]
    return kw


def _schema_and_expected(case):
    full = dkharness.case_schema(case)
    if case.get("columns", "all") == "all":
        return full, dkharness.expected_rows(case)
    types = dict(full[1])
    sub = ("struct", tuple((n, types[n]) for n in case["columns"]))
    return sub, dkharness.canon_manifest_rows(dkharness.expected_rows(case), sub)


def _has_variant(case):
    return "variant" in json.dumps(dkharness.case_schema(case))


@pytest.mark.parametrize("case", READ)
def test_pyarrow_table_equals_expected_rows(case):
    scan = _scan(case)
    schema, expected = _schema_and_expected(case)
    table = pa.table(scan)
    names = [n for n, _ in schema[1]]
    assert sorted(table.schema.names) == sorted(names)
    if case.get("columns", "all") == "all":  # dk/scan.h: data columns, then partition columns
        parts = [n for n in names if n in case["partition_columns"]]
        assert table.schema.names == [n for n in names if n not in parts] + \
            sorted(parts, key=case["partition_columns"].index)
    else:
        assert table.schema.names == names
    got = dkharness.canon_arrow(table, schema)
    if _has_variant(case):
        # variant columns reach pyarrow as struct<metadata, value> (parquet.variant): decoded
        # by the test kit's own decoder (variant_decode.py, from the Parquet spec) into the
        # JSON values of the expected rows (Spark's)
        got = [variant_decode.decode_tree(r, schema) for r in got]
    dkharness.assert_rows_equal(got, expected, ordered=case.get("ordered", False))
    # the scan is re-creatable: a second stream reads the same rows; to_pyarrow is pa.table
    assert scan.to_pyarrow().num_rows == table.num_rows


def _flat(schema) -> bool:
    return all(t[0] in ("prim", "decimal") for _, t in schema[1])


@pytest.mark.parametrize("case", READ)
def test_duckdb_consumes_the_stream(case):
    duckdb = pytest.importorskip("duckdb")
    s = _scan(case)  # noqa: F841 - DuckDB finds `s` by name
    schema, expected = _schema_and_expected(case)
    con = duckdb.connect()
    assert con.sql("SELECT count(*) FROM s").fetchall() == [(len(expected),)]
    if _flat(schema):
        got = pa.table(con.sql("SELECT * FROM s").arrow())
        dkharness.assert_rows_equal(dkharness.canon_arrow(got, schema), expected)


@pytest.mark.parametrize("case", READ)
def test_polars_consumes_the_stream(case):
    pl = pytest.importorskip("polars")
    scan = _scan(case)
    schema, expected = _schema_and_expected(case)
    df = pl.DataFrame(scan)
    assert df.height == len(expected)
    assert sorted(df.columns) == sorted(n for n, _ in schema[1])
    if _flat(schema):
        dkharness.assert_rows_equal(dkharness.canon_arrow(df.to_arrow(), schema), expected)


@pytest.mark.parametrize("case", SUMMARY)
def test_summary_aggregates_through_duckdb(case):
    """1M rows: DuckDB aggregates over dk's stream equal the generator's formula checks."""
    duckdb = pytest.importorskip("duckdb")
    checks = json.loads((TESTDATA / case["expected"]).read_text())["checks"]
    s = _snapshot(case).scan()  # noqa: F841
    con = duckdb.connect()
    for expr, want in checks.items():
        if expr.startswith("count where "):
            q = f"SELECT count(*) FROM s WHERE {expr[len('count where '):]}"
        else:
            q = f"SELECT {expr} FROM s"
        assert con.sql(q).fetchall() == [(want,)], q


# ---- scan options ----------------------------------------------------------------------------

BASIC = TESTDATA / "delta-golden/basic-with-inserts-overwrite-restore"


def _basic_expected():
    c = dkharness.case_by_id("delta-golden/basic-with-inserts-overwrite-restore@latest")
    return c, dkharness.expected_rows(c)


def test_columns_limit_filter():
    case, expected = _basic_expected()
    snap = dk.Table(str(BASIC)).snapshot()
    t = pa.table(snap.scan(columns=["id"]))
    assert t.column_names == ["id"]
    assert sorted(t.column("id").to_pylist()) == sorted(r["id"] for r in expected)
    assert pa.table(snap.scan(limit=7)).num_rows == 7
    assert pa.table(snap.scan(limit=0)).num_rows == 0
    assert pa.table(snap.scan(limit=10 ** 9)).num_rows == len(expected)
    got = pa.table(snap.scan(filter="id < 10"))
    dkharness.assert_rows_equal(dkharness.canon_arrow(got, dkharness.case_schema(case)),
                                [r for r in expected if r["id"] < 10])
    files = snap.files(filter="id < 10")
    assert 0 < len(files) <= snap.num_files
    # decode threads change nothing but speed
    got = pa.table(snap.scan(threads=3))
    dkharness.assert_rows_equal(dkharness.canon_arrow(got, dkharness.case_schema(case)), expected)


def test_files_filter_prunes_partitions():
    """files(filter=) on a partition column keeps exactly the files whose partition value
    (as written in the log, parsed here by Python's Decimal) satisfies the predicate."""
    from decimal import Decimal
    snap = dk.Table(str(TESTDATA / "delta-golden/basic-decimal-table")).snapshot()
    every = snap.files()
    for pred, keep in (("part > 0", lambda d: d > 0), ("part <= 0", lambda d: d <= 0),
                       ("part IS NULL", lambda d: False)):
        want = sorted(f["path"] for f in every
                      if f["partition_values"]["part"] is not None
                      and keep(Decimal(f["partition_values"]["part"])))
        assert sorted(f["path"] for f in snap.files(filter=pred)) == want, pred


def test_with_metadata_adds_the_metadata_struct():
    snap = dk.Table(str(BASIC)).snapshot()
    t = pa.table(snap.scan(with_metadata=True))
    assert t.column_names[-1] == "_metadata"
    meta = t.column("_metadata").type
    names = {meta.field(i).name for i in range(meta.num_fields)}
    assert {"file_path", "file_name", "file_size", "row_index"} <= names
    paths = set(t.column("_metadata").combine_chunks().field("file_name").to_pylist())
    assert paths == {f["path"].rsplit("/", 1)[-1] for f in snap.files()}
    t2 = pa.table(snap.scan(columns=["id"], with_metadata=["row_index"]))
    assert t2.column_names == ["id", "_metadata"]


def test_scan_errors():
    snap = dk.Table(str(BASIC)).snapshot()
    with pytest.raises(dk.ColumnNotFound):
        snap.scan(columns=["no_such_column"])
    with pytest.raises(dk.InvalidArgument):
        snap.scan(filter="id <")
    with pytest.raises(TypeError):
        snap.scan(columns="id")
    with pytest.raises(ValueError):
        snap.scan(limit=-1)
    with pytest.raises(ValueError):
        snap.scan(with_metadata=["nope"])


def test_stream_is_consumed_once_and_recreatable():
    snap = dk.Table(str(BASIC)).snapshot()
    scan = snap.scan()
    cap = scan.__arrow_c_stream__()
    reader = pa.RecordBatchReader._import_from_c_capsule(cap)
    n = reader.read_all().num_rows
    with pytest.raises(Exception):  # the capsule's stream was moved out: cannot import twice
        pa.RecordBatchReader._import_from_c_capsule(cap)
    assert pa.table(scan).num_rows == n  # a fresh stream
    assert pa.schema(scan) == reader.schema


def test_scan_object_conveniences():
    case, expected = _basic_expected()
    t = dk.Table(str(BASIC))
    scan = t.scan(filter="id < 10")            # Table.scan = latest snapshot's scan
    assert isinstance(scan, dk.Scan) and "files=" in repr(scan)
    reader = scan.to_reader()
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.read_all().num_rows == 10
    st = scan.stats
    assert st["files_total"] == t.snapshot().num_files
    assert st["files_selected"] == len(scan.files())
    assert st["rows_returned"] == 10
    assert all(f["path"] in {g["path"] for g in t.snapshot().files()} for f in scan.files())
    assert pa.schema(scan).names == ["id"]


def test_stream_outlives_scan_snapshot_and_table():
    case, expected = _basic_expected()
    reader = pa.RecordBatchReader.from_stream(dk.Table(str(BASIC)).snapshot().scan())
    gc.collect()  # no Python reference to the Scan, Snapshot or Table is left but the stream's
    assert reader.read_all().num_rows == len(expected)


# ---- GIL and lifetimes -----------------------------------------------------------------------

class _Stream(ctypes.Structure):
    pass


class _Array(ctypes.Structure):
    _fields_ = [("length", ctypes.c_int64), ("null_count", ctypes.c_int64),
                ("offset", ctypes.c_int64), ("n_buffers", ctypes.c_int64),
                ("n_children", ctypes.c_int64), ("buffers", ctypes.c_void_p),
                ("children", ctypes.c_void_p), ("dictionary", ctypes.c_void_p),
                ("release", ctypes.CFUNCTYPE(None, ctypes.c_void_p)),
                ("private_data", ctypes.c_void_p)]


# PYFUNCTYPE: ctypes keeps the GIL during these calls, like a C consumer that holds it
_Stream._fields_ = [("get_schema", ctypes.c_void_p),
                    ("get_next", ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.POINTER(_Stream),
                                                   ctypes.POINTER(_Array))),
                    ("get_last_error", ctypes.c_void_p),
                    ("release", ctypes.PYFUNCTYPE(None, ctypes.POINTER(_Stream))),
                    ("private_data", ctypes.c_void_p)]

_get_ptr = ctypes.pythonapi.PyCapsule_GetPointer
_get_ptr.restype = ctypes.c_void_p
_get_ptr.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _stream_of(capsule):
    return ctypes.cast(_get_ptr(capsule, b"arrow_array_stream"), ctypes.POINTER(_Stream))


def _next_batch(stream) -> int:
    arr = _Array()
    rc = stream.contents.get_next(stream, ctypes.byref(arr))
    assert rc == 0
    if not arr.release:
        return -1
    n = arr.length
    arr.release(ctypes.addressof(arr))
    return n


def _big_case():
    if not SUMMARY:
        pytest.skip("no complete 1M-row table in the corpus")
    return SUMMARY[0].values[0]


def test_gil_is_released_while_decoding():
    snap = _snapshot(_big_case())
    cap = snap.scan().__arrow_c_stream__()
    stream = _stream_of(cap)
    ticks = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            ticks[0] += 1
    th = threading.Thread(target=spin)
    th.start()
    time.sleep(0.05)
    busy = 0.0
    during = 0
    while True:
        before = ticks[0]
        t0 = time.perf_counter()
        n = _next_batch(stream)  # the GIL is held by this thread when the call starts
        busy += time.perf_counter() - t0
        during += ticks[0] - before
        if n < 0:
            break
    stop.set()
    th.join()
    assert busy > 0
    assert during > 0, "no other Python thread ran while dk decoded (GIL not released)"


def test_scan_dropped_half_way_frees_everything():
    case = _big_case()
    gc.collect()
    base = dk._dk._live_allocations()
    snap = _snapshot(case)
    scan = snap.scan()
    # half-way through a pyarrow reader, then dropped
    reader = pa.RecordBatchReader.from_stream(scan)
    reader.read_next_batch()
    # and a raw stream with one batch read, released by the capsule destructor
    cap = scan.__arrow_c_stream__()
    assert _next_batch(_stream_of(cap)) > 0
    # and a multi-threaded scan whose decode workers are still running
    threaded = snap.scan(threads=2)
    cap2 = threaded.__arrow_c_stream__()
    assert _next_batch(_stream_of(cap2)) > 0
    del reader, cap, scan, cap2, threaded, snap
    gc.collect()
    assert dk._dk._live_allocations() == base
