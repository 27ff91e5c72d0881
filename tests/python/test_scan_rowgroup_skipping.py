"""Row-group skipping by Parquet statistics for floats, timestamps, decimals and dates.

Two data files are written here by pyarrow (500-row row groups, ids ascending so every row
group covers its own range of values): file A keeps timestamp units (millis, micros, nanos)
and stores small decimals as INT32/INT64; file B writes timestamps as INT96 (whose
statistics must not be used) and decimals as FIXED_LEN_BYTE_ARRAY. A Delta log naming both
files is written by hand (no per-file stats, so only row groups can be skipped).

Oracle: DuckDB reading the same Parquet files with the same predicate (DuckDB orders NaN
above every value and NaN = NaN, like Spark). dk's rows must equal DuckDB's; selective
predicates must skip row groups, and never one of file B on an INT96 column.
"""

import json
import math

import pytest

import dkharness as h

RG = 500
N = 4000  # per file: 8 row groups each


def _source(pa, offset):
    import datetime as dt
    import decimal
    base = dt.datetime(2020, 1, 1)
    ids = list(range(offset, offset + N))
    def d_of(i):
        k = i - offset
        if k // RG == 3 and k % 50 == 7:
            return float("nan")  # NaN only inside row group 3
        if k % 97 == 0 and k < 2 * RG:
            return -0.0  # row groups 0 and 1 only
        return (k - 1000) * 0.25
    cols = {
        "id": pa.array(ids, pa.int64()),
        "f": pa.array([None if i % 31 == 0 else (i - offset) * 0.5 for i in ids], pa.float32()),
        "d": pa.array([d_of(i) for i in ids], pa.float64()),
        "ts_ms": pa.array([base + dt.timedelta(minutes=(i - offset)) for i in ids],
                          pa.timestamp("ms", tz="UTC")),
        "ts_us": pa.array([base + dt.timedelta(seconds=(i - offset) * 7, microseconds=i % 1000)
                           for i in ids], pa.timestamp("us", tz="UTC")),
        "ts_ns": pa.array([(base - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1) * 1000
                           + (i - offset) * 3_000_000_001 for i in ids], pa.timestamp("ns", tz="UTC")),
        "ntz": pa.array([base + dt.timedelta(hours=(i - offset)) for i in ids], pa.timestamp("us")),
        "dec9": pa.array([decimal.Decimal(i - offset - 2000) / 100 for i in ids], pa.decimal128(9, 2)),
        "dec18": pa.array([decimal.Decimal((i - offset) * 12345) / 10000 for i in ids],
                          pa.decimal128(18, 4)),
        "dec30": pa.array([decimal.Decimal((i - offset - 10) * 10**20 + 5) / 1000 for i in ids],
                          pa.decimal128(30, 3)),
        "da": pa.array([dt.date(1995, 1, 1) + dt.timedelta(days=i - offset) for i in ids],
                       pa.date32()),
    }
    return pa.table(cols)


DELTA_SCHEMA = [("id", "long"), ("f", "float"), ("d", "double"), ("ts_ms", "timestamp"),
                ("ts_us", "timestamp"), ("ts_ns", "timestamp"), ("ntz", "timestamp_ntz"),
                ("dec9", "decimal(9,2)"), ("dec18", "decimal(18,4)"), ("dec30", "decimal(30,3)"),
                ("da", "date")]


@pytest.fixture(scope="module")
def rg_table(tmp_path_factory):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    root = tmp_path_factory.mktemp("rgskip") / "t"
    (root / "_delta_log").mkdir(parents=True)
    a, b = _source(pa, 0), _source(pa, 100000)
    pq.write_table(a, root / "a.parquet", row_group_size=RG, store_decimal_as_integer=True,
                   coerce_timestamps=None, version="2.6")
    pq.write_table(b, root / "b.parquet", row_group_size=RG, use_deprecated_int96_timestamps=True,
                   version="2.6")
    ma, mb = pq.ParquetFile(root / "a.parquet").metadata, pq.ParquetFile(root / "b.parquet").metadata
    assert ma.num_row_groups == mb.num_row_groups == N // RG
    # the physical layouts the test is about
    sa = {ma.schema.column(i).name: ma.schema.column(i).physical_type for i in range(ma.num_columns)}
    sb = {mb.schema.column(i).name: mb.schema.column(i).physical_type for i in range(mb.num_columns)}
    assert sa["dec9"] == "INT32" and sa["dec18"] == "INT64" and sa["ts_ns"] == "INT64"
    assert sb["ts_ms"] == "INT96" and sb["dec9"] == "FIXED_LEN_BYTE_ARRAY"
    schema = {"type": "struct", "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}}
                                           for n, t in DELTA_SCHEMA]}
    log = [
        {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                      "readerFeatures": ["timestampNtz"], "writerFeatures": ["timestampNtz"]}},
        {"metaData": {"id": "rg-skip-test", "format": {"provider": "parquet", "options": {}},
                      "schemaString": json.dumps(schema), "partitionColumns": [],
                      "configuration": {}, "createdTime": 0}},
    ]
    for name in ("a.parquet", "b.parquet"):
        log.append({"add": {"path": name, "partitionValues": {},
                            "size": (root / name).stat().st_size, "modificationTime": 0,
                            "dataChange": True}})
    (root / "_delta_log" / ("0" * 20 + ".json")).write_text("\n".join(json.dumps(x) for x in log))
    return root


# (dk predicate, DuckDB predicate, a selective one: row groups of file A must be skipped,
#  INT96 column: no row group of file B may be skipped)
CASES = [
    ("f < 100", "f < 100", True, False),
    # Parquet float min/max leave NaN out: > / >= / != never skip on a float column
    ("f >= 1900.5 AND f < 1950", "f >= 1900.5 AND f < 1950", False, False),
    ("f = 10", "f = 10", True, False),
    ("d < -200", "d < -200", True, False),
    ("d <= -250 OR d = 3", "d <= -250 OR d = 3", True, False),
    ("d > 600", "d > 600", False, False),  # NaN rows (row group 3) are > 600 and must stay
    ("d = 0", "d = 0", False, False),      # -0.0 = 0.0
    ("d = -0.0", "d = -0.0", False, False),
    ("isnan(d)", "coalesce(isnan(d), false)", False, False),
    ("NOT (d <= 600)", "NOT (d <= 600)", False, False),
    ("d != 5", "d != 5", False, False),
    ("d BETWEEN 10 AND 20", "d BETWEEN 10 AND 20", True, False),
    ("ts_ms < TIMESTAMP '2020-01-01 05:00:00'", "ts_ms < TIMESTAMP '2020-01-01 05:00:00'", True, True),
    ("ts_ms >= TIMESTAMP '2020-01-03 08:30:00.001'",
     "ts_ms >= TIMESTAMP '2020-01-03 08:30:00.001'", True, True),
    ("ts_us = TIMESTAMP '2020-01-01 00:11:40.000100'",
     "ts_us = TIMESTAMP '2020-01-01 00:11:40.000100'", True, True),
    ("ts_us > TIMESTAMP '2020-01-01 07:00:00'", "ts_us > TIMESTAMP '2020-01-01 07:00:00'", True, True),
    ("ts_ns < TIMESTAMP '2020-01-01 01:00:00'", "ts_ns < TIMESTAMP '2020-01-01 01:00:00'", True, True),
    ("ts_ns > TIMESTAMP '2020-01-04 10:00:00.5'", "ts_ns > TIMESTAMP '2020-01-04 10:00:00.5'", True, True),
    ("ntz < TIMESTAMP_NTZ '2020-01-20 00:00:00'", "ntz < TIMESTAMP '2020-01-20 00:00:00'", True, False),
    ("ntz BETWEEN TIMESTAMP_NTZ '2020-03-01 00:00:00' AND TIMESTAMP_NTZ '2020-03-02 00:00:00'",
     "ntz BETWEEN TIMESTAMP '2020-03-01 00:00:00' AND TIMESTAMP '2020-03-02 00:00:00'", True, False),
    ("dec9 < -15", "dec9 < -15", True, False),
    ("dec9 = 3.5", "dec9 = 3.5", True, False),
    ("dec18 > 4000", "dec18 > 4000", True, False),
    ("dec30 < 0", "dec30 < 0", True, False),
    ("dec30 >= 300000000000000000000", "dec30 >= 300000000000000000000", True, False),
    ("da > DATE '2005-01-01'", "da > DATE '2005-01-01'", True, False),
    ("da = DATE '1995-02-01' OR id = 3999", "da = DATE '1995-02-01' OR id = 3999", True, False),
]


def _duck_ids(root, where):
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    con.execute("SET TimeZone='UTC'")
    files = [str(root / "a.parquet"), str(root / "b.parquet")]
    # materialised first: DuckDB's own Parquet filter pushdown drops NaN rows for `d > x`
    con.execute("CREATE TABLE t AS SELECT * FROM read_parquet(?)", [files])
    rows = con.execute("SELECT id FROM t WHERE %s" % where).fetchall()
    return sorted(r[0] for r in rows)


@pytest.mark.dk_command("scan")
@pytest.mark.parametrize("where,duck,selective,int96", CASES, ids=[c[0] for c in CASES])
def test_row_group_skipping_keeps_duckdb_rows(rg_table, where, duck, selective, int96):
    rc, out, err = h.run_dk("scan", rg_table, "--where", where, "--columns", "id", "--format",
                            "jsonl", "--stats")
    assert rc == 0, err[-3000:]
    got = sorted(json.loads(l)["id"] for l in out.splitlines() if l.strip())
    want = _duck_ids(rg_table, duck)
    assert got == want
    stats = json.loads([l for l in err.splitlines() if l.startswith("{")][-1])
    assert stats["row_groups_total"] + 0 <= 2 * N // RG
    assert stats["rows_decoded"] == (stats["row_groups_total"] - stats["row_groups_skipped"]) * RG
    if selective:
        assert stats["row_groups_skipped"] > 0, stats
    if int96:  # file B's column is INT96: at most file A's row groups go
        assert stats["row_groups_skipped"] <= N // RG, stats
