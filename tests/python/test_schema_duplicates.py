"""Hardening (issue 18, item 1): a schema with two fields of one struct whose names are equal,
or equal ignoring case, is corrupt.

Before the fix such a schema was accepted and a scan crashed (heap overflow: both fields
resolved to one Parquet leaf). Each case rewrites the schemaString of a copy of the corpus
table ``data-reader-nested-struct`` (a: struct<aa, ab, ac: struct<aca, acb>>, b) and expects
``dk describe`` and ``dk scan`` to fail cleanly, naming the field; the unmodified copy still
reads. delta-rs (``deltalake``, the oracle) rejects the same schemas when it loads the table:
"Duplicate field name (case-insensitive)".
"""

import json

import pytest

import dkharness

CASE = "delta-golden/data-reader-nested-struct"


def rewrite_schema(table, edit):
    log = table / "_delta_log" / "00000000000000000000.json"
    lines = []
    for line in log.read_text().splitlines():
        o = json.loads(line)
        if "metaData" in o:
            s = json.loads(o["metaData"]["schemaString"])
            edit(s)
            o["metaData"]["schemaString"] = json.dumps(s)
        lines.append(json.dumps(o))
    log.write_text("\n".join(lines) + "\n")


def field(name, typ="integer"):
    return {"name": name, "type": typ, "nullable": True, "metadata": {}}


def add_top(name):
    return lambda s: s["fields"].append(field(name))


def add_nested(name):
    def edit(s):
        s["fields"][0]["type"]["fields"].append(field(name, "string"))
    return edit


def add_deep(name):
    def edit(s):
        s["fields"][0]["type"]["fields"][2]["type"]["fields"].append(field(name, "long"))
    return edit


def add_in_array(name):
    def edit(s):
        elem = {"type": "struct", "fields": [field("x"), field(name)]}
        s["fields"].append({"name": "arr", "type": {"type": "array", "elementType": elem,
                                                     "containsNull": True},
                            "nullable": True, "metadata": {}})
    return edit


def physical_twins(s):
    for i, name in enumerate(("a", "b")):
        s["fields"][i]["metadata"] = {"delta.columnMapping.physicalName": "col-1" if i else "COL-1"}


CASES = {
    "top_exact": (add_top("b"), "'b'"),
    "top_case": (add_top("B"), "'B'"),
    "nested_case": (add_nested("AA"), "'AA' in struct a"),
    "deep_exact": (add_deep("acb"), "'acb' in struct a.ac"),
    "in_array_struct": (add_in_array("X"), "'X' in struct arr"),
    "physical_names": (physical_twins, "same physical name"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_duplicate_field_names_are_corrupt(dk, tmp_path, name):
    edit, where = CASES[name]
    t = dkharness.copy_table(CASE, tmp_path)
    rc, out, _ = dk("scan", t, "--format", "jsonl")
    assert rc == 0 and len(out.splitlines()) > 0  # the unmodified copy reads
    rewrite_schema(t, edit)
    for cmd in (("describe", t), ("scan", t), ("files", t)):
        rc, out, err = dk(*cmd)
        assert rc == 1, (cmd, rc, out, err)
        assert "corrupt" in err and where in err, err
        assert str(t) in err, err  # names the table


@pytest.mark.parametrize("name", ["top_exact", "top_case", "nested_case"])
def test_delta_rs_rejects_the_same_schema(tmp_path, name):
    deltalake = pytest.importorskip("deltalake")
    t = dkharness.copy_table(CASE, tmp_path)
    rewrite_schema(t, CASES[name][0])
    with pytest.raises(Exception, match="Duplicate field name"):
        deltalake.DeltaTable(str(t)).to_pyarrow_table()
