"""Writing through the SQLite virtual table and the CLI: CREATE VIRTUAL TABLE ... USING
delta('path', schema=..., partition_by=...) creates the table; INSERT commits once per SQLite
transaction (autocommit statements one each, BEGIN..COMMIT one for all, ROLLBACK none);
`dk create/write/checkpoint/vacuum/restore` — read back by delta-rs."""
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from test_py_support import import_dk  # noqa: E402
dk = import_dk()

deltalake = pytest.importorskip("deltalake")


def rs_rows(root):
    return sorted(deltalake.DeltaTable(root).to_pyarrow_table().to_pylist(), key=lambda r: r["a"])


def test_sqlite_insert_one_commit_per_transaction(dk, tmp_path):
    root = str(tmp_path / "sq")
    sql = ("CREATE VIRTUAL TABLE t USING delta('%s', schema='a long, b string, d date', "
           "partition_by='b');"
           "INSERT INTO t(a, b, d) VALUES (1, 'x', '2024-01-02');"
           "BEGIN; INSERT INTO t(a, b) VALUES (2, 'y'); INSERT INTO t(a, b) VALUES (3, 'x'); "
           "COMMIT;"
           "BEGIN; INSERT INTO t(a, b) VALUES (4, 'z'); ROLLBACK;"
           "SELECT count(*) FROM t;" % root)
    rc, out, err = dk("sql", sql)
    assert rc == 0, err
    assert "3" in out
    import datetime
    assert rs_rows(root) == [{"a": 1, "b": "x", "d": datetime.date(2024, 1, 2)},
                             {"a": 2, "b": "y", "d": None}, {"a": 3, "b": "x", "d": None}]
    assert deltalake.DeltaTable(root).version() == 2  # create + 2 commits
    rc, out, err = dk("sql", "CREATE VIRTUAL TABLE t USING delta('%s'); "
                             "DELETE FROM t WHERE a = 1;" % root)
    # DELETE is row-level DML (deletion vectors): refused on a table without them, unchanged
    assert rc != 0 and "deletion vectors" in err
    assert deltalake.DeltaTable(root).version() == 2


def test_cli_create_vacuum_restore(dk, tmp_path):
    root = str(tmp_path / "c")
    rc, out, err = dk("create", root, "--schema", "a long, b string", "--partition-by", "b",
                      "--property", "delta.appendOnly=false")
    assert rc == 0, err
    dt = deltalake.DeltaTable(root)
    assert dt.metadata().partition_columns == ["b"]
    rc, out, err = dk("create", root, "--schema", "a long")
    assert rc != 0 and "already exists" in err
    rc, out, err = dk("create", root, "--schema", "a long", "--if-not-exists")
    assert rc == 0
    rc, out, err = dk("vacuum", root, "--dry-run")
    assert rc == 0 and "0 files" in err
    rc, out, err = dk("restore", root, "--version", "0")
    assert rc == 0 and "as version 1" in out
    assert deltalake.DeltaTable(root).history(1)[0]["operation"] == "RESTORE"


def test_cli_write_and_checkpoint(dk, tmp_path):
    root = str(tmp_path / "w")
    src1, src2 = str(tmp_path / "1.parquet"), str(tmp_path / "2.parquet")
    pq.write_table(pa.table({"a": pa.array([1, 2], pa.int64()), "b": ["x", "y"]}), src1)
    pq.write_table(pa.table({"a": pa.array([3], pa.int64()), "b": ["x"]}), src2)
    rc, out, err = dk("write", root, src1, src2, "--mode", "error", "--partition-by", "b")
    assert rc == 0, err
    rc, out, err = dk("write", root, src2, "--replace-where", "b = 'x'")
    assert rc == 0, err
    assert rs_rows(root) == [{"a": 2, "b": "y"}, {"a": 3, "b": "x"}]
    rc, out, err = dk("checkpoint", root)
    assert rc == 0 and "checkpoint.parquet" in out
    for v in range(2):
        os.remove(os.path.join(root, "_delta_log", "%020d.json" % v))
    assert rs_rows(root) == [{"a": 2, "b": "y"}, {"a": 3, "b": "x"}]
