"""`dk parquet write OUT --from IN` (issue #13): Parquet, CSV and JSON-lines input, checked by
reading the output with pyarrow (the oracle) against the input as pyarrow reads it."""
import datetime
import json

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from dkharness import run_dk


class _R:
    def __init__(self, t):
        self.returncode, self.stdout, self.stderr = t


def _write(out, src, *extra):
    return _R(run_dk("parquet", "write", str(out), "--from", str(src), *extra))


def test_from_parquet_roundtrip(tmp_path):
    t = pa.table({"a": pa.array([1, None, 3], pa.int64()), "s": ["x", "y", None],
                  "l": pa.array([[1], [], None], pa.list_(pa.int32())),
                  "d": pa.array([1.5, float("inf"), None])})
    src = tmp_path / "in.parquet"
    pq.write_table(t, src)
    out = tmp_path / "out.parquet"
    r = _write(out, src, "--compression", "zstd")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["rows"] == 3 and info["stats"]["nullCount"]["a"] == 1
    assert pq.read_table(out).equals(t)
    assert pq.ParquetFile(out).metadata.row_group(0).column(0).compression == "ZSTD"


def test_from_csv_types(tmp_path):
    src = tmp_path / "in.csv"
    src.write_text('id,name,price,day,ts,flag\n'
                   '1,"a, b",1.5,2024-01-02,2024-01-02 03:04:05.123456,true\n'
                   '2,"multi\nline",2,2024-02-03,2024-03-04 05:06:07,false\n'
                   ',x,,,,\n')
    out = tmp_path / "out.parquet"
    r = _write(out, src)
    assert r.returncode == 0, r.stderr
    got = pq.read_table(out)
    assert got.schema.field("id").type == pa.int64()
    assert got.schema.field("price").type == pa.float64()
    assert got.schema.field("day").type == pa.date32()
    assert got.schema.field("ts").type == pa.timestamp("us")
    assert got.schema.field("flag").type == pa.bool_()
    # pyarrow's own CSV reader is the oracle for the values
    exp = pacsv.read_csv(src, convert_options=pacsv.ConvertOptions(
        column_types={"id": pa.int64(), "price": pa.float64(), "day": pa.date32(),
                      "ts": pa.timestamp("us"), "flag": pa.bool_()},
        strings_can_be_null=True))
    assert got.to_pylist() == exp.to_pylist()


def test_from_jsonl(tmp_path):
    src = tmp_path / "in.jsonl"
    rows = [{"a": 1, "b": "x", "c": {"k": [1, 2]}, "t": "2024-01-01T00:00:00Z"},
            {"a": 2.5, "b": None, "e": True, "t": "2024-01-02T10:00:00.5Z"}]
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = tmp_path / "out.parquet"
    r = _write(out, src)
    assert r.returncode == 0, r.stderr
    got = pq.read_table(out).to_pylist()
    utc = datetime.timezone.utc
    assert got == [
        {"a": 1.0, "b": "x", "c": '{"k":[1,2]}', "t": datetime.datetime(2024, 1, 1, tzinfo=utc), "e": None},
        {"a": 2.5, "b": None, "c": None, "t": datetime.datetime(2024, 1, 2, 10, 0, 0, 500000, tzinfo=utc),
         "e": True}]


def test_bad_input_no_output(tmp_path):
    src = tmp_path / "bad.jsonl"
    src.write_text('{"a": 1}\n{"a": \n')
    out = tmp_path / "out.parquet"
    r = _write(out, src)
    assert r.returncode != 0 and "line 2" in r.stderr
    assert not out.exists()
    r = _write(out, tmp_path / "missing.csv")
    assert r.returncode != 0 and not out.exists()
    r = _write(out, src, "--compression", "lzo")
    assert r.returncode == 2 and not out.exists()
