"""Hardening (issue 18, item 8): `dk sql` does not create files unless asked, delta_scan(NULL)
is an error, and protocol errors name the table.

Before the fix `dk sql "ATTACH 'x.db' AS e"` (and VACUUM INTO) created the file, delta_scan(NULL)
looked for a table directory named "NULL", and an unsupported protocol was reported without
the table's path by `dk describe`, `dk files` and `dk scan`. The protocol cases run on a copy
of the corpus table ``deltalog-invalid-protocol-version`` (minReaderVersion 99).
"""

import pytest

import dkharness

PROTO = "delta-golden/deltalog-invalid-protocol-version"
PRIMS = "delta-golden/data-reader-primitives"


@pytest.mark.parametrize("stmt", [
    "ATTACH '{f}' AS e",
    "ATTACH DATABASE '{f}' AS e; CREATE TABLE e.t(x)",
    "SELECT 1; VACUUM INTO '{f}'",
])
def test_statements_that_create_files_are_refused(dk, tmp_path, stmt):
    f = tmp_path / "created.db"
    rc, out, err = dk("sql", stmt.format(f=f))
    assert rc == 1, (rc, out, err)
    assert "refused" in err and "--allow-attach" in err, err
    assert not f.exists()


def test_allow_attach_allows_them(dk, tmp_path):
    f = tmp_path / "created.db"
    rc, out, err = dk("sql", "--allow-attach", f"ATTACH '{f}' AS e; CREATE TABLE e.t(x); "
                      "INSERT INTO e.t VALUES (7); SELECT x FROM e.t", "--format", "csv")
    assert rc == 0, err
    assert out.split() == ["x", "7"]
    assert f.exists()


def test_delta_scan_still_works_under_the_authorizer(dk, tmp_path):
    t = dkharness.copy_table(PRIMS, tmp_path)
    rc, out, err = dk("sql", f"SELECT count(*) AS n FROM delta_scan('{t}')", "--format", "csv")
    assert rc == 0, err
    assert out.split() == ["n", str(len(dkharness.expected_rows(PRIMS + "@latest")))]


@pytest.mark.parametrize("arg", ["NULL", "null", " NULL ", "''"])
def test_delta_scan_without_a_path_is_an_error(dk, tmp_path, arg):
    rc, out, err = dk("sql", f"SELECT * FROM delta_scan({arg})", cwd=tmp_path)
    assert rc == 1, (rc, out, err)
    assert "first argument must be the table path" in err, err


def test_a_table_named_null_is_still_a_path(dk, tmp_path):
    t = dkharness.copy_table(PRIMS, tmp_path)
    (tmp_path / "NULL").symlink_to(t)
    rc, out, err = dk("sql", "SELECT count(*) AS n FROM delta_scan('NULL')", "--format", "csv",
                      cwd=tmp_path)
    assert rc == 0, err


@pytest.mark.parametrize("cmd", [
    ("describe", "{t}"), ("files", "{t}"), ("scan", "{t}"),
    ("sql", "SELECT * FROM delta_scan('{t}')"), ("sql", "SELECT * FROM delta_files('{t}')"),
])
def test_protocol_errors_name_the_table(dk, tmp_path, cmd):
    t = dkharness.copy_table(PROTO, tmp_path)
    argv = [a.format(t=t) for a in cmd]
    rc, out, err = dk(*argv)
    assert rc == 1, (rc, out, err)
    assert "reader version" in err and str(t) in err, err
