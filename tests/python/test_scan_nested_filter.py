"""Nested projection combined with a filter on fields the projection drops.

`dk scan --columns st.a --where "st.b = 'x'"` must read st.b for the filter and return only
st.a. The table is written here with delta-rs (deltalake) from a pyarrow table; the oracle is
pyarrow itself: the source table filtered with pyarrow.compute and projected with
pyarrow's struct field access. dk must return exactly those rows, whole and through splits.
"""

import json

import pytest

import dkharness as h

N = 3000


@pytest.fixture(scope="module")
def nested_table(tmp_path_factory):
    pa = pytest.importorskip("pyarrow")
    pytest.importorskip("deltalake")
    from deltalake import WriterProperties, write_deltalake
    d = tmp_path_factory.mktemp("nested") / "t"
    inner = pa.struct([("x", pa.int32()), ("y", pa.float64())])
    st = pa.struct([("a", pa.int64()), ("b", pa.string()), ("c", inner)])
    rows = []
    for i in range(N):
        c = None if i % 13 == 0 else {"x": None if i % 7 == 0 else i % 50,
                                       "y": (i % 17) * 0.5}
        s = None if i % 29 == 0 else {"a": i, "b": None if i % 5 == 0 else "b%d" % (i % 4),
                                      "c": c}
        rows.append({"id": i, "st": s, "p": i % 2, "t": "t%d" % (i % 3)})
    src = pa.Table.from_pylist(rows, schema=pa.schema(
        [("id", pa.int64()), ("st", st), ("p", pa.int32()), ("t", pa.string())]))
    write_deltalake(str(d), src, partition_by=["p"],
                    writer_properties=WriterProperties(max_row_group_size=500,
                                                       write_batch_size=500))
    return d, src


def _field(tbl, path):
    """pyarrow array for a dotted path (struct_field: NULL parents give NULL)."""
    import pyarrow.compute as pc
    top, *rest = path.split(".")
    arr = tbl.column(top)
    for name in rest:
        arr = pc.struct_field(arr, name)
    return arr


# (columns, dk predicate, pyarrow mask builder)
CASES = [
    ("st.a", "st.b = 'b1'", lambda t, pc: pc.equal(_field(t, "st.b"), "b1")),
    ("id,st.a", "st.c.y > 4 AND st.b IS NOT NULL",
     lambda t, pc: pc.and_kleene(pc.greater(_field(t, "st.c.y"), 4.0),
                                 pc.is_valid(_field(t, "st.b")))),
    ("st.c.x", "st.a BETWEEN 100 AND 900 OR st.c.y = 0",
     lambda t, pc: pc.or_kleene(pc.and_kleene(pc.greater_equal(_field(t, "st.a"), 100),
                                              pc.less_equal(_field(t, "st.a"), 900)),
                                pc.equal(_field(t, "st.c.y"), 0.0))),
    ("st.b,t", "st IS NULL OR st.c IS NULL",
     lambda t, pc: pc.or_kleene(pc.is_null(_field(t, "st")), pc.is_null(_field(t, "st.c")))),
    ("st.c.y,id", "st.c.x < 10 AND p = 1",
     lambda t, pc: pc.and_kleene(pc.less(_field(t, "st.c.x"), 10), pc.equal(_field(t, "p"), 1))),
    ("st.a,st.c.x", "st.c.y >= 7 AND st.a > 0",
     lambda t, pc: pc.and_kleene(pc.greater_equal(_field(t, "st.c.y"), 7.0),
                                 pc.greater(_field(t, "st.a"), 0))),
]


def _want(src, cols, mask_fn):
    import pyarrow.compute as pc
    mask = pc.fill_null(mask_fn(src, pc), False)  # WHERE: NULL drops the row
    kept = src.filter(mask)
    out = []
    arrays = {c: _field(kept, c).to_pylist() for c in cols}
    for i in range(kept.num_rows):
        out.append(tuple(arrays[c][i] for c in cols))
    return sorted(out, key=repr)


def _got(out, cols):
    rows = []
    for line in out.splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        vals = []
        for c in cols:
            v = r
            for name in c.split("."):
                v = None if v is None else v[name]
            vals.append(v)
        rows.append(tuple(vals))
    return sorted(rows, key=repr)


def _out_keys(out):
    keys = set()
    for line in out.splitlines():
        if line.strip():
            r = json.loads(line)
            keys.add(json.dumps({k: sorted(v) if isinstance(v, dict) else None
                                 for k, v in r.items()}, sort_keys=True))
    return keys


@pytest.mark.dk_command("scan")
@pytest.mark.parametrize("cols,where,mask", CASES, ids=[c[1] for c in CASES])
@pytest.mark.parametrize("splits", [False, True], ids=["whole", "splits"])
def test_nested_projection_with_filter_equals_pyarrow(nested_table, cols, where, mask, splits):
    d, src = nested_table
    extra = ["--via-splits", "--split-size", "20000"] if splits else []
    rc, out, err = h.run_dk("scan", d, "--columns", cols, "--where", where, "--format", "jsonl",
                            *extra)
    assert rc == 0, err[-3000:]
    want_cols = cols.split(",")
    want = _want(src, want_cols, mask)
    assert len(want) > 0
    assert _got(out, want_cols) == want
    # only the projected fields come out: the filter's extra fields are dropped
    tops = {}
    for c in want_cols:
        top, *rest = c.split(".")
        tops.setdefault(top, set())
        if rest:
            tops[top].add(rest[0])
    for line in out.splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        assert set(r) == set(tops), r
        for top, fields in tops.items():
            if fields and r[top] is not None:
                assert set(r[top]) == fields, r
