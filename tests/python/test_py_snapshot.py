"""dk Python binding: tables, snapshots, schema capsules, history, files and error mapping.

Oracles: the shared corpus manifest (resolved versions, schema strings, partition columns,
protocols, table properties, expected errors and active-file lists of the golden tables,
written from upstream Delta tests) and delta-rs (``deltalake.DeltaTable``) reading the same
tables; pyarrow as the consumer of the Arrow schema capsule.
"""

import datetime as dt
import gc
import json
import threading
from pathlib import Path
from urllib.parse import unquote

import pytest

import dkharness
from test_py_support import import_dk, read_cases

dk = import_dk()
pa = pytest.importorskip("pyarrow")

TESTDATA = dkharness.testdata_dir()


def _tables_and_versions():
    seen, out = set(), []
    for c in read_cases():
        key = (c["table"], c["version"])
        if key not in seen:
            seen.add(key)
            out.append(pytest.param(c, id=c["id"]))
    return out


READ_CASES = _tables_and_versions()


def _snap(case):
    t = dk.Table(str(dkharness.table_path(case)))
    return t.snapshot(version=case["version"]) if case["version"] is not None else t.snapshot()


def _manifest_protocol(case):
    p = case["protocol"]
    return {"min_reader_version": p["minReaderVersion"],
            "min_writer_version": p["minWriterVersion"],
            "reader_features": p.get("readerFeatures"),
            "writer_features": p.get("writerFeatures")}


# ---- the manifest as oracle ------------------------------------------------------------------

@pytest.mark.parametrize("case", READ_CASES)
def test_snapshot_matches_manifest(case):
    s = _snap(case)
    assert s.version == case["resolved_version"]
    assert json.loads(s.schema.json) == json.loads(case["schema_string"])
    assert s.partition_columns == case["partition_columns"]
    assert s.properties == case.get("table_properties", {})
    got = s.protocol
    want = _manifest_protocol(case)
    assert (got["min_reader_version"], got["min_writer_version"]) == \
        (want["min_reader_version"], want["min_writer_version"])
    for k in ("reader_features", "writer_features"):
        assert (sorted(got[k]) if got[k] is not None else None) == \
            (sorted(want[k]) if want[k] is not None else None), k


@pytest.mark.parametrize("case", READ_CASES)
def test_schema_capsule_in_pyarrow(case):
    s = _snap(case)
    schema = pa.schema(s.schema)
    want = json.loads(case["schema_string"])["fields"]
    assert schema.names == [f["name"] for f in want]
    assert [f.nullable for f in schema] == [f["nullable"] for f in want]
    # the logical types pyarrow sees are the Delta types of the schema string
    assert dkharness.case_schema(case)[1] == tuple(
        (f["name"], dkharness.delta_type(f["type"])) for f in want)
    for field, w in zip(schema, want):
        assert _arrow_matches_delta(field.type, w["type"]), (field, w["type"])
    assert s.schema.to_pyarrow() == schema
    assert s.schema.names == schema.names


_PRIM = {"string": ("string", "large_string", "string_view"), "long": ("int64",),
         "integer": ("int32",), "short": ("int16",), "byte": ("int8",), "float": ("float",),
         "double": ("double",), "boolean": ("bool",), "binary": ("binary", "large_binary"),
         "date": ("date32[day]",)}


def _arrow_matches_delta(at, t) -> bool:
    """Whether Arrow type `at` is the usual Arrow mapping of Delta type `t` (JSON form)."""
    if isinstance(t, str):
        if t in _PRIM:
            return str(at) in _PRIM[t]
        if t == "timestamp":
            return pa.types.is_timestamp(at) and at.unit == "us" and at.tz in ("UTC", "+00:00")
        if t == "timestamp_ntz":
            return pa.types.is_timestamp(at) and at.unit == "us" and at.tz is None
        if t.startswith("decimal("):
            p, sc = map(int, t[8:-1].split(","))
            return pa.types.is_decimal(at) and (at.precision, at.scale) == (p, sc)
        if t == "variant":
            return pa.types.is_struct(at)
        return False
    if t["type"] == "array":
        return (pa.types.is_list(at) or pa.types.is_large_list(at)) and \
            _arrow_matches_delta(at.value_type, t["elementType"])
    if t["type"] == "map":
        return pa.types.is_map(at) and _arrow_matches_delta(at.key_type, t["keyType"]) and \
            _arrow_matches_delta(at.item_type, t["valueType"])
    if t["type"] == "struct":
        return pa.types.is_struct(at) and at.num_fields == len(t["fields"]) and all(
            at.field(i).name == f["name"] and _arrow_matches_delta(at.field(i).type, f["type"])
            for i, f in enumerate(t["fields"]))
    return False


SNAPSHOT_CASES = [pytest.param(c, id=c["id"]) for c in dkharness.cases("snapshot")]


@pytest.mark.parametrize("case", SNAPSHOT_CASES)
def test_files_match_manifest_snapshot_cases(case):
    exp = json.loads((TESTDATA / case["expected"]).read_text())
    t = dk.Table(str(dkharness.table_path(case)))
    s = t.snapshot(version=exp["version"]) if "version" in exp else t.snapshot()
    if "version" in exp:
        assert s.version == exp["version"]
    if "active_files" in exp:
        got = sorted(f["path"] for f in s.files())
        root = str(dkharness.table_path(case))
        want = sorted(p[len(root) + 1:] if p.startswith(root + "/") else p
                      for p in exp["active_files"])
        got = sorted(p[len(root) + 1:] if p.startswith(root + "/") else p for p in got)
        assert got == want
        assert s.num_files == len(want)


# ---- delta-rs as oracle ----------------------------------------------------------------------

def _delta_rs(case):
    deltalake = pytest.importorskip("deltalake")
    try:
        if case["version"] is not None:
            return deltalake.DeltaTable(str(dkharness.table_path(case)), version=case["version"])
        return deltalake.DeltaTable(str(dkharness.table_path(case)))
    except Exception as e:  # delta-rs lacks a feature of this table
        pytest.skip(f"delta-rs cannot open this table: {type(e).__name__}: {str(e)[:200]}")


@pytest.mark.parametrize("case", READ_CASES)
def test_snapshot_matches_delta_rs(case):
    d = _delta_rs(case)
    s = _snap(case)
    assert s.version == d.version()
    md = d.metadata()
    assert s.partition_columns == list(md.partition_columns)
    assert s.properties == dict(md.configuration)
    assert s.metadata["id"] == md.id
    p = d.protocol()
    assert (s.protocol["min_reader_version"], s.protocol["min_writer_version"]) == \
        (p.min_reader_version, p.min_writer_version)
    # schema: same names, nullability and (for flat primitive columns) the same Arrow types
    ds = pa.schema(d.schema().to_arrow())
    ks = pa.schema(s.schema)
    assert ks.names == ds.names
    assert [f.nullable for f in ks] == [f.nullable for f in ds]
    # files: same set of paths and sizes
    adds = pa.table(d.get_add_actions(flatten=True)).to_pylist()
    root = Path(str(dkharness.table_path(case)))

    def rel(p):
        p = str(p)
        if p.startswith("file://"):
            p = p[len("file://"):]
        return p[len(str(root)) + 1:] if p.startswith(str(root) + "/") else p
    # delta-rs reports the log's (URL-encoded) path; dk the decoded one, i.e. the file's name
    want = sorted((unquote(rel(a["path"])), a["size_bytes"]) for a in adds)
    got = sorted((rel(f["path"]), f["size"]) for f in s.files())
    assert got == want
    for path, size in got:
        assert (root / path).stat().st_size == size


LATEST_TABLES = sorted({c["table"] for c in read_cases()})


def log_mtime_ms(table, version):
    st = (TESTDATA / table / "_delta_log" / ("%020d.json" % version)).stat()
    return st.st_mtime_ns // 1000000


@pytest.mark.parametrize("table", LATEST_TABLES)
def test_history_matches_delta_rs(table):
    deltalake = pytest.importorskip("deltalake")
    try:
        d = deltalake.DeltaTable(str(TESTDATA / table))
        want = d.history()
    except Exception as e:
        pytest.skip(f"delta-rs cannot read this table's history: {type(e).__name__}")
    t = dk.Table(str(TESTDATA / table))
    got = t.history()
    assert [h["version"] for h in got] == [h["version"] for h in want]
    for g, w in zip(got, want):
        for key in ("operation", "operationParameters", "engineInfo", "txnId", "timestamp"):
            if key in w and w[key] is not None:
                assert g.get(key) == w[key], (g["version"], key)
    # Snapshot.history is the table's history cut at the snapshot's version
    s = t.snapshot()
    assert [h["version"] for h in s.history()] == [h["version"] for h in got]
    # with a limit, commit times are made increasing over the listed commits only (DESCRIBE
    # HISTORY LIMIT n; tests/spark/test_spark_history.py): the newest alone keeps its mtime
    def no_ct(hs):
        return [{k: v for k, v in h.items() if k != "commit_timestamp"} for h in hs]
    one = t.history(limit=1)
    assert no_ct(one) == no_ct(got[:1])
    if not got[0].get("inCommitTimestamp"):
        assert one[0]["commit_timestamp"] == log_mtime_ms(table, got[0]["version"])
    if s.version > 0:
        s0 = t.snapshot(version=0)
        assert [h["version"] for h in s0.history()] == [0]


# ---- time travel -----------------------------------------------------------------------------

def test_time_travel_versions_match_manifest():
    for c in read_cases():
        if c["version"] is None:
            continue
        assert _snap(c).version == c["version"]


def _copy_with_commit_times(tmp_path, table, times_ms):
    """A copy of `table` whose commit files have the given modification times (ms)."""
    import os
    import shutil
    dst = tmp_path / "t"
    shutil.copytree(TESTDATA / table, dst)
    for v, ms in times_ms.items():
        f = dst / "_delta_log" / f"{v:020d}.json"
        os.utime(f, ns=(ms * 1_000_000, ms * 1_000_000))
    return dst


def test_time_travel_by_timestamp(tmp_path):
    """snapshot(timestamp=T) is the latest version committed at or before T (PROTOCOL.md:
    commit time = file modification time without in-commit timestamps)."""
    base = 1_700_000_000_000
    times = {v: base + 60_000 * v for v in range(4)}
    t = dk.Table(str(_copy_with_commit_times(
        tmp_path, "delta-golden/basic-with-inserts-overwrite-restore", times)))
    assert t.snapshot().version == 3
    for v, ms in times.items():
        assert t.snapshot(version=v).timestamp == ms
        for probe in (ms, ms + 1, ms + 59_999):
            if v == 3 and probe > ms:
                continue
            assert t.snapshot(timestamp=probe).version == v, (v, probe)
        when = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(milliseconds=ms)
        assert t.snapshot(timestamp=when).version == v
        assert t.snapshot(timestamp=when.replace(tzinfo=None)).version == v  # naive = UTC
        assert t.snapshot(timestamp=when.isoformat()).version == v
        plus2 = when.astimezone(dt.timezone(dt.timedelta(hours=2)))
        assert t.snapshot(timestamp=plus2).version == v
    with pytest.raises(dk.VersionNotFound):
        t.snapshot(timestamp=base - 1)
    with pytest.raises(dk.VersionNotFound):  # after the last commit, as Delta-Spark
        t.snapshot(timestamp=times[3] + 1)
    with pytest.raises(ValueError):
        t.snapshot(version=0, timestamp=base)
    with pytest.raises(TypeError):
        t.snapshot(timestamp=1.5j)


def test_time_travel_by_timestamp_adjusts_equal_commit_times(tmp_path):
    """Equal file times are made strictly increasing (each commit at least 1 ms after the
    previous one, as Delta does), so the first of four equal times selects version 0."""
    base = 1_700_000_000_000
    t = dk.Table(str(_copy_with_commit_times(
        tmp_path, "delta-golden/basic-with-inserts-overwrite-restore", {v: base for v in range(4)})))
    for v in range(4):
        assert t.snapshot(timestamp=base + v).version == v


# ---- errors ----------------------------------------------------------------------------------

ERROR_CASES = [pytest.param(c, id=c["id"]) for c in dkharness.cases("error")]


def _expected_exception(text: str):
    t = text.lower()
    if "not a delta table" in t:
        return dk.TableNotFound
    if "unsupported" in t:
        return dk.UnsupportedFeature
    return dk.CorruptTable


@pytest.mark.parametrize("case", ERROR_CASES)
def test_error_cases_raise_mapped_exceptions(case):
    exp = json.loads((TESTDATA / case["expected"]).read_text())
    want = _expected_exception(exp["expected_error"])
    with pytest.raises(dk.DkError) as ei:
        dk.Table(str(dkharness.table_path(case))).snapshot()
    assert isinstance(ei.value, want), (type(ei.value), str(ei.value), exp["expected_error"])
    assert str(ei.value)  # dk's message
    assert ei.value.status in ("not found", "corrupt", "unsupported") or ei.value.status


def test_error_types_and_attributes(tmp_path):
    with pytest.raises(dk.TableNotFound) as ei:
        dk.Table(str(tmp_path / "nope"))
    assert ei.value.status == "not found" and ei.value.code == 4
    assert "nope" in str(ei.value)
    with pytest.raises(dk.TableNotFound):
        dk.Table(str(tmp_path)).snapshot()  # exists, but no _delta_log
    t = dk.Table(str(TESTDATA / "delta-golden/basic-with-inserts-overwrite-restore"))
    with pytest.raises(dk.VersionNotFound) as ei:
        t.snapshot(version=10_000)
    assert "10000" in str(ei.value)
    with pytest.raises(ValueError):
        t.snapshot(version=-1)
    with pytest.raises(TypeError):
        t.snapshot(version="1")
    with pytest.raises(dk.UnsupportedFeature):
        dk.Table(str(tmp_path), storage_options={"AWS_REGION": "x"})
    with pytest.raises(TypeError):
        dk.Table(str(tmp_path), storage_options=[1])
    dk.Table(str(tmp_path), storage_options={})  # empty options are fine
    for e in (dk.TableNotFound, dk.VersionNotFound, dk.UnsupportedFeature, dk.CorruptTable,
              dk.InvalidArgument, dk.ColumnNotFound, dk.DkIOError):
        assert issubclass(e, dk.DkError)
    assert issubclass(dk.InvalidArgument, ValueError)
    assert issubclass(dk.DkIOError, OSError)


def test_version_before_checkpoint_is_out_of_range(tmp_path):
    """Without the JSON commits below a checkpoint, older versions cannot be rebuilt."""
    import shutil
    src = TESTDATA / "delta-golden/basic-with-inserts-deletes-checkpoint"
    dst = tmp_path / "t"
    shutil.copytree(src, dst)
    log = dst / "_delta_log"
    cps = sorted(log.glob("*.checkpoint.parquet"))
    if not cps:
        pytest.skip("no checkpoint in this table")
    cpv = int(cps[0].name.split(".")[0])
    for f in log.glob("*.json"):
        if int(f.name.split(".")[0]) <= cpv:
            f.unlink()
    t = dk.Table(str(dst))
    assert t.snapshot().version >= cpv
    with pytest.raises(dk.VersionNotFound):
        t.snapshot(version=0)


# ---- lifetimes, capsules, threads ------------------------------------------------------------

def test_objects_outlive_their_parents_and_free_everything():
    gc.collect()
    base = dk._dk._live_allocations()
    t = dk.Table(str(TESTDATA / "delta-golden/basic-decimal-table"))
    s = t.snapshot()
    schema = s.schema
    del t, s
    gc.collect()
    assert pa.schema(schema).names == ["part", "col1", "col2", "col3"]
    assert schema.fields[0] == ("part", "decimal(12,5)", True)
    # a capsule that nobody consumes is released by its destructor
    cap = schema.__arrow_c_schema__()
    assert type(cap).__name__ == "PyCapsule"
    del cap
    del schema
    gc.collect()
    assert dk._dk._live_allocations() == base


def test_snapshots_from_threads():
    t = dk.Table(str(TESTDATA / "delta-golden/basic-with-inserts-overwrite-restore"))
    latest = t.snapshot().version
    results, errors = [], []

    def work(v):
        try:
            for _ in range(5):
                results.append((v, t.snapshot(version=v).version, len(t.snapshot(version=v).files())))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)
    th = [threading.Thread(target=work, args=(v % (latest + 1),)) for v in range(8)]
    for x in th:
        x.start()
    for x in th:
        x.join()
    assert not errors
    assert all(v == got for v, got, _ in results)
    counts = {v: n for v, _, n in results}
    for v, n in counts.items():
        assert n == t.snapshot(version=v).num_files


def test_repr_and_files_shape():
    t = dk.Table(str(TESTDATA / "delta-golden/basic-decimal-table"))
    s = t.snapshot()
    assert "basic-decimal-table" in repr(t) and "version=0" in repr(s)
    assert s.table.path == t.path
    f = s.files()[0]
    assert set(f) >= {"path", "size", "modification_time", "partition_values", "stats",
                      "deletion_vector"}
    assert set(f["partition_values"]) == {"part"}


def test_misuse_raises_instead_of_crashing():
    for cls in (dk.Snapshot, dk.Schema):
        with pytest.raises(TypeError):
            cls()
    t = dk.Table.__new__(dk.Table)  # never initialised
    assert t.path is None
    for call in (t.snapshot, t.history, t.scan):
        with pytest.raises(RuntimeError):
            call()
    t2 = dk.Table(str(TESTDATA / "delta-golden/basic-decimal-table"))
    with pytest.raises(RuntimeError):
        t2.__init__(str(TESTDATA))
    with pytest.raises(TypeError):
        dk.Table(None)
