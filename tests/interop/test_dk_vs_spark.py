"""dk against Delta-Spark's own answers (the oracle of tests/interop/README.md), on tables Spark and
delta-rs wrote: at EVERY version, dk's snapshot (version, file set with sizes, partition values,
record stats and DV descriptors, schema string, partition columns, protocol) equals Spark's;
timestamp time travel resolves to Spark's version; dk's rows equal Spark's at every version; and
for every recorded filter query dk returns Spark's rows and never selects more files than Spark.

Run: .venv/bin/python -m pytest -q -m interop tests/interop   (make test-interop)
"""
import json
import os
import sys
import urllib.parse

import pytest

import gen_tables

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "python"))
import dkharness as h  # noqa: E402

pytestmark = pytest.mark.interop

TABLES = gen_tables.table_names()


def load(oracle_dir, name):
    with open(os.path.join(oracle_dir, name, "oracle.json"), encoding="utf-8") as f:
        return json.load(f)


def root(oracle_dir, o):
    return os.path.join(oracle_dir, o["table"], o["table_root"])


def dk_json(*args):
    rc, out, err = h.run_dk(*args, "--json")
    assert rc == 0, f"dk {' '.join(map(str, args))}: {err}"
    return json.loads(out)


def rows_of(oracle_dir, name, rel):
    with open(os.path.join(oracle_dir, name, rel), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _features(p, key):
    v = p.get(key)
    return sorted(v) if v else None


@pytest.mark.parametrize("name", TABLES)
def test_snapshots_equal_spark_at_every_version(oracle_dir, name):
    o = load(oracle_dir, name)
    t = root(oracle_dir, o)
    for snap in o["snapshots"]:
        v = snap["version"]
        d = dk_json("describe", t, "--version", v)
        assert d["version"] == v
        md = snap["metadata"]
        assert d["partition_columns"] == md["partition_columns"], f"v{v}"
        assert d["schema"] == json.loads(md["schema_string"]), f"v{v}: schema"
        assert d["properties"] == (md["configuration"] or {}), f"v{v}: properties"
        assert d["id"] == md["id"]
        p, sp = d["protocol"], snap["protocol"]
        assert p["minReaderVersion"] == sp["min_reader_version"], f"v{v}"
        assert p["minWriterVersion"] == sp["min_writer_version"], f"v{v}"
        assert _features(p, "readerFeatures") == sp["reader_features"], f"v{v}"
        assert _features(p, "writerFeatures") == sp["writer_features"], f"v{v}"
        assert d["num_files"] == snap["num_files"] and d["size_bytes"] == snap["total_size"], f"v{v}"

        files = dk_json("files", t, "--version", v)["files"]
        mine = {f["path"]: f for f in files}
        spark = {urllib.parse.unquote(f["path"]): f for f in snap["files"]}
        assert sorted(mine) == sorted(spark), f"v{v}: file sets differ"
        for path, sf in spark.items():
            f = mine[path]
            assert f["size"] == sf["size"], f"v{v} {path}"
            assert f["partition_values"] == sf["partition_values"], f"v{v} {path}"
            assert (f.get("stats") is None) == (sf["stats"] is None), f"v{v} {path}"
            if sf["stats"] is not None:
                assert json.loads(f["stats"]) == json.loads(sf["stats"]), f"v{v} {path}"
            sdv, dv = sf["deletion_vector"], f.get("deletion_vector")
            assert (dv is None) == (sdv is None), f"v{v} {path}: DV presence"
            if sdv:
                for k in ("storageType", "pathOrInlineDv", "sizeInBytes", "cardinality"):
                    assert dv[k] == sdv[k], f"v{v} {path}: DV {k}"
            for k in ("base_row_id", "default_row_commit_version"):
                if sf.get(k) is not None:
                    assert f.get(k) == sf[k], f"v{v} {path}: {k}"


@pytest.mark.parametrize("name", TABLES)
def test_rows_equal_spark_at_every_version(oracle_dir, name):
    o = load(oracle_dir, name)
    t = root(oracle_dir, o)
    for snap in o["snapshots"]:
        v = snap["version"]
        schema = h.delta_type(json.loads(snap["metadata"]["schema_string"]))
        cols = [c for c in snap["row_columns"] if not c.startswith("_row_")]
        rc, out, err = h.run_dk("scan", t, "--version", v, "--format", "jsonl",
                                "--columns", ",".join(cols))
        if rc != 0 and "unsupported" in err:
            pytest.xfail(f"v{v}: {err.strip()}")
        assert rc == 0, f"v{v}: {err}"
        types = dict(schema[1])
        sub = ("struct", tuple((c, types[c]) for c in cols))
        got = h.canon_dk_jsonl(out, sub)
        want = [{c: r[c] for c in cols} for r in rows_of(oracle_dir, name, snap["rows_file"])]
        h.assert_rows_equal(got, h.canon_manifest_rows(want, sub))


@pytest.mark.parametrize("name", TABLES)
def test_history_equals_spark(oracle_dir, name):
    """`dk history` gives DESCRIBE HISTORY's versions, timestamps (ICT, or commit-file mtimes
    made increasing) and operations."""
    o = load(oracle_dir, name)
    got = [(e["version"], e["timestamp"], e["commitInfo"].get("operation"))
           for e in dk_json("history", root(oracle_dir, o))]
    want = [(e["version"], e["timestamp_ms"], e["operation"]) for e in o["history"]]
    assert sorted(got) == want


@pytest.mark.parametrize("name", [t["name"] for t in gen_tables.TABLES if t.get("time_travel")])
def test_timestamp_travel_resolves_like_spark(oracle_dir, name):
    o = load(oracle_dir, name)
    t = root(oracle_dir, o)
    for tt in o["time_travel"] or []:
        rc, out, err = h.run_dk("describe", t, "--timestamp", str(tt["timestamp_ms"]), "--json")
        want = tt.get("history_version")
        if want is None:  # Spark refused: before the first or after the last commit
            assert rc != 0, f"{tt['timestamp']}: dk answered {out[:200]}, Spark refused"
            continue
        assert rc == 0, f"{tt['timestamp']}: {err}"
        assert json.loads(out)["version"] == want, tt["timestamp"]


@pytest.mark.parametrize("name", TABLES)
def test_filter_queries_equal_spark_and_select_no_more_files(oracle_dir, name):
    o = load(oracle_dir, name)
    t = root(oracle_dir, o)
    latest = o["snapshots"][-1]
    schema = h.delta_type(json.loads(latest["metadata"]["schema_string"]))
    cols = [c for c in latest["row_columns"] if not c.startswith("_row_")]
    types = dict(schema[1])
    sub = ("struct", tuple((c, types[c]) for c in cols))
    for q in o["queries"]:
        rc, out, err = h.run_dk("scan", t, "--where", q["predicate"], "--format", "jsonl",
                                "--columns", ",".join(cols), "--stats")
        if rc != 0 and ("unsupported" in err or "parse" in err or "syntax" in err):
            pytest.xfail(f"{q['name']} ({q['predicate']}): {err.strip()[:200]}")
        assert rc == 0, f"{q['name']} ({q['predicate']}): {err}"
        want = [{c: r[c] for c in cols} for r in rows_of(oracle_dir, name, q["rows_file"])]
        h.assert_rows_equal(h.canon_dk_jsonl(out, sub), h.canon_manifest_rows(want, sub))
        stats = json.loads([ln for ln in err.splitlines() if ln.startswith("{")][-1])
        if q.get("files_scanned") is not None:
            assert stats["files_selected"] <= q["files_scanned"], \
                f"{q['name']} ({q['predicate']}): dk selected {stats['files_selected']} files, " \
                f"Spark {q['files_scanned']}"
