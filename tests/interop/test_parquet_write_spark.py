"""Spark as the oracle of dk's Parquet writer (issue #13), in one SparkSession:

1. read-back: random tables (tests/python/pq_write_gen.py, Spark's types) written by
   dk.write_parquet with random options are read by spark.read.parquet and must equal the input;
2. Delta statistics: random tables written as Delta by Spark + delta-spark (single file each,
   table properties dataSkippingNumIndexedCols / dataSkippingStatsColumns, strings built to hit
   every truncation branch, NaN/inf/-0.0, all-null columns, nested structs, arrays, maps,
   variants); dk.write_parquet of the same rows (read from Spark's own data file) must produce
   the same add.stats after JSON normalisation (numbers compared as Decimal, so 1.0E10 == 1e10).

The Spark tables are generated once and cached under $DK_INTEROP_DIR/pqwrite-stats/<hash of
this file's generator>; later runs only pay for Spark's reads. DK_PQ_WRITE_SPARK_CASES sets the
number of read-back cases (default 40).
"""
import datetime
import decimal
import glob
import hashlib
import inspect
import json
import math
import os
import random
import shutil
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "python"))

pytestmark = pytest.mark.interop

N_READBACK = int(os.environ.get("DK_PQ_WRITE_SPARK_CASES", "40"))
SPARK_KINDS = ["bool", "int8", "int16", "int32", "int64", "float", "double", "dec5_2", "dec18_3",
               "dec38_10", "date", "ts_utc", "ts_ntz", "string", "large_string", "binary",
               "fixed5", "list_int", "large_list_str", "struct_deep", "map_str_long",
               "list_struct", "map_int_list"]


@pytest.fixture(scope="module")
def spark():
    try:
        import pyspark  # noqa: F401
        import delta  # noqa: F401
    except ImportError:
        pytest.skip("pyspark/delta-spark not installed (run scripts/install_spark.sh)")
    from sparkenv import get_spark
    return get_spark("dk-pqwrite")


# ---- 1. Spark reads dk's files ------------------------------------------------------------

def _scalar(v):
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    if isinstance(v, datetime.datetime) and v.tzinfo is not None:
        return v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    return v


def _canon_arrow(v, t):
    """pyarrow's Python value of type t in the form Spark's values take below."""
    import pyarrow as pa
    if v is None:
        return None
    if pa.types.is_map(t):
        return {_scalar(k): _canon_arrow(x, t.item_type) for k, x in v}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [_canon_arrow(x, t.value_type) for x in v]
    if pa.types.is_struct(t):
        return {t.field(i).name: _canon_arrow(v[t.field(i).name], t.field(i).type)
                for i in range(t.num_fields)}
    return _scalar(v)


def _canon_spark(v):
    from pyspark.sql import Row
    if isinstance(v, Row):
        return {k: _canon_spark(x) for k, x in v.asDict(recursive=False).items()}
    if isinstance(v, dict):
        return {_scalar(k): _canon_spark(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_canon_spark(x) for x in v]
    return _scalar(v)


@pytest.mark.parametrize("seed", range(N_READBACK))
def test_spark_reads_dk_files(spark, tmp_path, seed):
    import dk
    from pq_write_gen import random_params, random_table
    r = random.Random(seed)
    kinds = r.sample(SPARK_KINDS, r.randint(3, 8))
    table, _ = random_table(10_000 + seed, rows=r.choice([0, 1, 50, 700]), kinds=kinds)
    params = random_params(seed)
    params.pop("threads", None)
    path = tmp_path / "f.parquet"
    dk.write_parquet(path, table, **params)
    rows = spark.read.parquet(str(path)).collect()
    assert len(rows) == table.num_rows
    for name in table.column_names:
        t = table.schema.field(name).type
        exp = [_canon_arrow(v, t) for v in table.column(name).to_pylist()]
        got = [_canon_spark(row[name]) for row in rows]
        for i, (a, b) in enumerate(zip(exp, got)):
            if isinstance(a, float) and isinstance(b, float):
                assert a == b and math.copysign(1, a) == math.copysign(1, b), (name, i, a, b)
            else:
                assert a == b, (name, i, params, a, b)


# ---- 2. Delta statistics as delta-spark writes them ---------------------------------------

HIGH = "\U0010FFFF"
TRUNC = [
    "a" * 32, "a" * 33, "b" * 31 + "é" + "c", "z" * 32 + "\x7f" + "q", "y" * 32 + "~rest",
    "x" * 31 + "😀" + "tail", "w" * 32 + HIGH + HIGH + "u", "v" * 32 + HIGH * 20,
    "é" * 40, "😀" * 20, "m" * 32 + "\u00ff" + "n", "", " ", "A" * 100,
]

STATS_SCHEMA = ("b BOOLEAN, i8 TINYINT, i16 SMALLINT, i32 INT, i64 BIGINT, f FLOAT, d DOUBLE, "
                "d1 DECIMAL(5,2), d2 DECIMAL(18,3), d3 DECIMAL(38,10), dt DATE, ts TIMESTAMP, "
                "ntz TIMESTAMP_NTZ, s STRING, s_long STRING, bin BINARY, allnull INT, "
                "st STRUCT<a: INT, b: STRUCT<c: STRING, e: DOUBLE>, flag: BOOLEAN>, "
                "arr ARRAY<INT>, m MAP<STRING, BIGINT>, vj STRING")

STATS_CASES = [
    ("default", {}),
    ("indexed3", {"delta.dataSkippingNumIndexedCols": "3"}),
    ("indexed18", {"delta.dataSkippingNumIndexedCols": "18"}),
    ("indexed0", {"delta.dataSkippingNumIndexedCols": "0"}),
    ("indexed_all", {"delta.dataSkippingNumIndexedCols": "-1"}),
    ("statscols", {"delta.dataSkippingStatsColumns": "s_long,st.b.c,ts,D"}),
    ("statscols_struct", {"delta.dataSkippingStatsColumns": "st,i8"}),
    ("prefix5", {"delta.dataSkippingStringPrefixLength": "5"}),
]


def _stats_rows(seed, n):
    r = random.Random(seed)
    base = datetime.datetime(2000, 1, 1)

    def maybe(v, p=0.15):
        return None if r.random() < p else v

    def dbl():
        return r.choice([0.0, -0.0, 1.5, -7.25, float("inf"), float("-inf"), float("nan"),
                         r.uniform(-1e9, 1e9), 1e-300])

    rows = []
    for k in range(n):
        ts_us = r.randint(-10 ** 15, 10 ** 15)
        if r.random() < 0.5:
            ts_us = ts_us // 1000 * 1000 + r.choice([0, 1, 999])
        rows.append({
            "b": maybe(r.random() < 0.5),
            "i8": maybe(r.randint(-128, 127)), "i16": maybe(r.randint(-32768, 32767)),
            "i32": maybe(r.randint(-2 ** 31, 2 ** 31 - 1)), "i64": maybe(r.randint(-2 ** 63, 2 ** 63 - 1)),
            "f": maybe(float(dbl()) if seed % 3 else float("nan")),
            "d": maybe(dbl() if seed % 4 else r.choice([0.0, -0.0])),
            "d1": maybe(decimal.Decimal(r.randint(-99999, 99999)).scaleb(-2)),
            "d2": maybe(decimal.Decimal(r.randint(-10 ** 18 + 1, 10 ** 18 - 1)).scaleb(-3)),
            "d3": maybe(decimal.Decimal(r.randint(-10 ** 38 + 1, 10 ** 38 - 1)).scaleb(
                -10, decimal.Context(prec=60))),
            "dt": maybe(datetime.date(1970, 1, 1) + datetime.timedelta(days=r.randint(-100000, 100000))),
            "ts": maybe(datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=ts_us)),
            "ntz": maybe(base + datetime.timedelta(microseconds=r.randint(-10 ** 14, 10 ** 14))),
            "s": maybe("".join(r.choice("abcé😀") for _ in range(r.randint(0, 10)))),
            "s_long": maybe(r.choice(TRUNC) if seed % 2 else TRUNC[k % len(TRUNC)]),
            "bin": maybe(bytes(r.randint(0, 255) for _ in range(r.randint(0, 5)))),
            "allnull": None,
            "st": maybe({"a": maybe(r.randint(-5, 5)),
                         "b": maybe({"c": maybe(r.choice(TRUNC)), "e": maybe(dbl())}),
                         "flag": maybe(True)}),
            "arr": maybe([maybe(r.randint(0, 9)) for _ in range(r.randint(0, 3))]),
            "m": maybe({f"k{j}": maybe(r.randint(0, 9)) for j in range(r.randint(0, 2))}),
            "vj": maybe(json.dumps({"x": r.randint(0, 9)})),
        })
    return rows


def _generator_hash():
    src = inspect.getsource(_stats_rows) + repr(STATS_SCHEMA) + repr(STATS_CASES) + repr(TRUNC) \
        + inspect.getsource(_make_stats_tables)
    return hashlib.sha256(src.encode()).hexdigest()[:16]


def _make_stats_tables(spark, out):
    from pyspark.sql.types import _parse_datatype_string
    schema = _parse_datatype_string(STATS_SCHEMA)
    for ci, (name, props) in enumerate(STATS_CASES):
        for seed in range(3):
            path = os.path.join(out, f"{name}-{seed}")
            if os.path.exists(os.path.join(path, "DONE")):
                continue
            shutil.rmtree(path, ignore_errors=True)
            rows = _stats_rows(ci * 100 + seed, [1, 40, 300][seed])
            if seed == 0:  # one row, everything null but the struct's fields
                rows = [{k: None for k in rows[0]}]
            df = spark.createDataFrame(rows, schema).selectExpr(
                *[c for c in schema.fieldNames() if c != "vj"], "parse_json(vj) AS v")
            ddl = STATS_SCHEMA.replace(", vj STRING", ", v VARIANT")
            tp = ", ".join(f"'{k}' = '{v}'" for k, v in props.items())
            spark.sql(f"CREATE TABLE delta.`{path}` ({ddl}) USING delta"
                      + (f" TBLPROPERTIES ({tp})" if tp else ""))
            df.coalesce(1).write.format("delta").mode("append").save(path)
            open(os.path.join(path, "DONE"), "w").close()


@pytest.fixture(scope="module")
def stats_tables(spark):
    root = os.environ.get("DK_INTEROP_DIR") or os.path.join(REPO, "build", "interop")
    out = os.path.join(root, "pqwrite-stats", _generator_hash())
    os.makedirs(out, exist_ok=True)
    _make_stats_tables(spark, out)
    return out


def _norm(js):
    return json.loads(js, parse_float=decimal.Decimal, parse_int=decimal.Decimal)


def _add_action(path):
    with open(os.path.join(path, "_delta_log", "00000000000000000001.json")) as f:
        for line in f:
            a = json.loads(line)
            if "add" in a:
                return a["add"]
    raise AssertionError("no add action")


def _dk_input(path):
    """The rows of Spark's data file as Arrow, typed as the Delta schema says."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    add = _add_action(path)
    t = pq.read_table(os.path.join(path, add["path"]), coerce_int96_timestamp_unit="us")
    fields = []
    cols = []
    for f, c in zip(t.schema, t.columns):
        if f.name == "ts":  # Spark writes TIMESTAMP as INT96 (no zone in Arrow): it is UTC
            c = c.cast(pa.timestamp("us", "UTC"))
            f = pa.field(f.name, c.type, f.nullable)
        if f.name == "v":
            f = f.with_metadata({b"ARROW:extension:name": b"parquet.variant"})
            if hasattr(c.type, "storage_type"):
                c = pa.chunked_array([ch.storage for ch in c.chunks], c.type.storage_type)
                f = pa.field(f.name, c.type, f.nullable, metadata=f.metadata)
        fields.append(f)
        cols.append(c)
    return pa.Table.from_arrays(cols, schema=pa.schema(fields)), add


@pytest.mark.parametrize("case", [f"{n}-{s}" for n, _ in STATS_CASES for s in range(3)])
@pytest.mark.parametrize("ts_ceil", [0, 1])
def test_delta_stats_equal_spark(stats_tables, tmp_path, case, ts_ceil):
    import dk
    path = os.path.join(stats_tables, case)
    props = dict(STATS_CASES)[case.rsplit("-", 1)[0]]
    table, add = _dk_input(path)
    res = dk.write_parquet(tmp_path / "x.parquet", table,
                           num_indexed_cols=props.get("delta.dataSkippingNumIndexedCols"),
                           stats_columns=props.get("delta.dataSkippingStatsColumns"),
                           string_prefix_length=int(props.get("delta.dataSkippingStringPrefixLength", 0)),
                           timestamp_max_ceil=bool(ts_ceil))
    spark_stats = _norm(add["stats"])
    dk_stats = _norm(res["stats"])
    if ts_ceil:
        # the one allowed difference: a timestamp max with sub-millisecond digits is rounded up
        for col in ("ts", "ntz"):
            nz = [v for v in table.column(col).to_pylist() if v is not None]
            spark_max = (spark_stats.get("maxValues") or {}).get(col)
            dk_max = (dk_stats.get("maxValues") or {}).get(col)
            if nz and spark_max is not None and max(nz).microsecond % 1000:
                top = max(nz)
                want = top.replace(microsecond=top.microsecond // 1000 * 1000) + \
                    datetime.timedelta(milliseconds=1)
                assert dk_max.startswith(want.strftime("%Y-%m-%dT%H:%M:%S.") +
                                         "%03d" % (want.microsecond // 1000)), (dk_max, want)
                spark_stats["maxValues"][col] = dk_max
    assert dk_stats == spark_stats, (case, _diff(dk_stats, spark_stats))


def _diff(a, b, path=""):
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += _diff(a.get(k, "<absent>"), b.get(k, "<absent>"), f"{path}.{k}")
        return out
    return [] if a == b else [f"{path}: dk {a!r} spark {b!r}"]
