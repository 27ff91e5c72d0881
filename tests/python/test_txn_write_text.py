"""`dk write TABLE FILE...` with CSV and JSON-lines files: the table holds exactly the rows
pyarrow reads from the same files (pyarrow.csv / pyarrow.json, cast to the table's types), and
delta-rs reads the same; types come from an existing table's columns; bad values fail the write
naming file, row and column, and leave the table unchanged."""
import datetime
import decimal

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pytest

from test_py_support import import_dk  # noqa: E402
dkmod = import_dk()

deltalake = pytest.importorskip("deltalake")

CSV = '''i,f,b,d,ts,s,p
1,1.5,true,2024-01-31,2024-01-31 10:11:12,plain,a
-7,2,false,1999-12-31,2000-01-01 00:00:00.123456,"with, comma",b
,,,,,,a
42,-0.25,true,2024-02-29,2024-02-29T23:59:59,"multi
line ""quoted""",needs:esc%
'''

JSONL = '''{"i": 1, "f": 1.5, "b": true, "s": "x", "p": "a"}
{"i": 2, "f": null, "s": "y \\u00e9", "p": "b"}

{"i": -3, "f": 2, "b": false, "p": "a", "s": null}
'''


def table_rows(root, cols):
    t = pa.table(dkmod.Table(root).snapshot().scan())
    return sorted((tuple(r[c] for c in cols) for r in t.to_pylist()), key=repr)


def oracle_rows(t, schema, cols):
    t = t.select([f.name for f in schema]).cast(schema)
    return sorted((tuple(r[c] for c in cols) for r in t.to_pylist()), key=repr)


def rs_rows(root, cols):
    t = deltalake.DeltaTable(root).to_pyarrow_table()
    return sorted((tuple(r[c] for c in cols) for r in t.to_pylist()), key=repr)


def schema_of(root):
    return pa.table(dkmod.Table(root).snapshot().scan()).schema


def test_csv_into_a_new_table(dk, tmp_path):
    src = tmp_path / "in.csv"
    src.write_text(CSV)
    root = str(tmp_path / "t")
    rc, out, err = dk("write", root, src, "--mode", "error", "--partition-by", "p")
    assert rc == 0, err
    sch = schema_of(root)
    types = {f.name: f.type for f in sch}
    assert types["i"] == pa.int64() and types["f"] == pa.float64() and types["b"] == pa.bool_()
    assert types["d"] == pa.date32() and types["ts"] == pa.timestamp("us")  # timestamp_ntz
    cols = [f.name for f in sch]
    want = oracle_rows(pacsv.read_csv(src, convert_options=pacsv.ConvertOptions(
        strings_can_be_null=True)), sch, cols)
    assert table_rows(root, cols) == want == rs_rows(root, cols)
    assert (datetime.datetime(2000, 1, 1, 0, 0, 0, 123456),) in [(r[4],) for r in want]
    assert dkmod.Table(root).snapshot().metadata["partition_columns"] == ["p"]


def test_jsonl_and_csv_append_take_the_tables_types(dk, tmp_path):
    root = str(tmp_path / "t")
    rc, _, err = dk("create", root, "--schema", "i int, f float, b boolean, s string, p string, "
                    "m decimal(10,2)", "--partition-by", "p")
    assert rc == 0, err
    j = tmp_path / "in.jsonl"
    j.write_text(JSONL)
    c = tmp_path / "more.csv"
    c.write_text("p,m,i\na,12.34,5\nb,-0.5,\n")
    rc, out, err = dk("write", root, j, c, "--mode", "append")
    assert rc == 0, err
    assert dkmod.Table(root).snapshot().version == 1  # one commit for both files
    sch = schema_of(root)
    assert sch.field("i").type == pa.int32() and sch.field("m").type == pa.decimal128(10, 2)
    cols = [f.name for f in sch]
    got = table_rows(root, cols)
    want = oracle_rows(pajson.read_json(j).append_column("m", pa.nulls(3, pa.decimal128(10, 2))),
                       sch, cols)
    ext = pacsv.read_csv(c, convert_options=pacsv.ConvertOptions(
        column_types={"m": pa.decimal128(10, 2), "i": pa.int32()}))
    for name in ("f", "b", "s"):
        ext = ext.append_column(name, pa.nulls(len(ext), sch.field(name).type))
    want = sorted(want + oracle_rows(ext, sch, cols), key=repr)
    assert got == want == rs_rows(root, cols)
    assert (5, None, None, None, decimal.Decimal("12.34"), "a") in got


@pytest.mark.parametrize("name,text,msg", [
    ("bad.csv", "i,p\n1,a\nx,b\n", "row 2: column 'i'"),
    ("big.csv", "i,p\n3000000000,a\n", "row 1: column 'i'"),
    ("bad.jsonl", '{"i": 1, "p": "a"}\n{"i": 2, "p": \n', "line 2"),
    ("dec.csv", "m,p\n1.234,a\n", "column 'm'"),
])
def test_bad_text_input_leaves_the_table_unchanged(dk, tmp_path, name, text, msg):
    root = str(tmp_path / "t")
    dk("create", root, "--schema", "i int, p string, m decimal(5,2)", check=True)
    src = tmp_path / name
    src.write_text(text)
    rc, out, err = dk("write", root, src, "--mode", "append")
    assert rc == 1 and name in err and msg in err, err
    assert dkmod.Table(root).snapshot().version == 0
    assert dkmod.Table(root).snapshot().num_files == 0
