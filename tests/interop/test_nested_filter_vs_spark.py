"""Nested projection combined with a filter on another field of the same struct, against Spark.

For every recorded filter query whose predicate reads a nested field (`st.a = 7`), dk scans with
a projection that keeps a DIFFERENT field of that struct (`--columns id,st.b.c`): the filter
must still see `st.a`, and the output must hold only the projected field. The oracle is Spark's
answer to the same query (rows recorded by dump_oracle.py), projected here to those paths.

Run: .venv/bin/python -m pytest -q -m interop tests/interop
"""
import json
import os
import re
import sys

import pytest

import gen_tables

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "python"))
import dkharness as h  # noqa: E402

pytestmark = pytest.mark.interop


def _load(oracle_dir, name):
    with open(os.path.join(oracle_dir, name, "oracle.json"), encoding="utf-8") as f:
        return json.load(f)


def _rows(oracle_dir, name, rel):
    with open(os.path.join(oracle_dir, name, rel), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _field(t, name):
    for n, ft in t[1]:
        if n.lower() == name.lower():
            return n, ft
    return None, None


def _leaf_paths(t, prefix=()):
    if t[0] != "struct":
        yield prefix
        return
    for n, ft in t[1]:
        yield from _leaf_paths(ft, prefix + (n,))


def _prune_type(t, path):
    if not path:
        return t
    n, ft = _field(t, path[0])
    return ("struct", ((n, _prune_type(ft, path[1:])),))


def _prune_value(v, path):
    if v is None or not path:
        return v
    for k in v:
        if k.lower() == path[0].lower():
            return {k: _prune_value(v[k], path[1:])}
    raise KeyError(path[0])


def _cases(oracle_dir, name):
    """(query, flat column, struct column, projected path) for each nested-filter query."""
    o = _load(oracle_dir, name)
    latest = o["snapshots"][-1]
    schema = h.delta_type(json.loads(latest["metadata"]["schema_string"]))
    flat = next((n for n, t in schema[1] if t[0] != "struct" and t[0] not in ("array", "map")),
                None)
    out = []
    for q in o["queries"]:
        for top, sub in re.findall(r"\b([A-Za-z_]\w*)\.([A-Za-z_]\w*)", q["predicate"]):
            n, t = _field(schema, top)
            if t is None or t[0] != "struct":
                continue
            others = [p for p in _leaf_paths(t) if p[0].lower() != sub.lower()]
            if others and flat:
                out.append((q, flat, n, others[0], schema))
            break
    return out


@pytest.mark.parametrize("name", gen_tables.table_names())
def test_nested_projection_with_filter_equals_spark(oracle_dir, name):
    o = _load(oracle_dir, name)
    t = os.path.join(oracle_dir, o["table"], o["table_root"])
    cases = _cases(oracle_dir, name)
    if not cases:
        pytest.skip("no filter query on a nested field")
    for q, flat, top, path, schema in cases:
        col = ".".join((top,) + path)
        rc, out, err = h.run_dk("scan", t, "--where", q["predicate"], "--format", "jsonl",
                                "--columns", f"{flat},{col}")
        assert rc == 0, f"{q['predicate']} / {col}: {err}"
        types = dict(schema[1])
        sub = ("struct", ((flat, types[flat]), (top, _prune_type(types[top], path))))
        want = [{flat: r[flat], top: _prune_value(r[top], path)}
                for r in _rows(oracle_dir, name, q["rows_file"])]
        got = [json.loads(line) for line in out.splitlines() if line.strip()]
        for r in got:  # only the projected field comes out
            assert set(r) == {flat, top}, r
            v = r[top]
            for p in path[:-1]:
                if v is None:
                    break
                assert set(v) == {p}, r
                v = v[p]
        h.assert_rows_equal(h.canon_dk_jsonl(got, sub), h.canon_manifest_rows(want, sub))
