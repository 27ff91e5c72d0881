"""Hardening (issue 18, item 3): path confinement (dk_table_options.confine_paths).

On by default in the dk CLI, dk sql / the SQLite connector and the Python binding: a data file,
deletion-vector file or sidecar that the log names outside the table root is refused with
"... lies outside the table root ..."; absolute paths inside the root still work; the option
turns it off for shallow clones. Every table here is a copy of a corpus table in a temp dir whose
log is rewritten to name a file moved out of the root. The oracle for "still reads" is the
corpus's expected rows (11 rows of data-reader-primitives; basic-dv-no-checkpoint's expected
file); before the fix every refused case read the outside file (rc 0).
"""

import json
import os
import shutil
from urllib.parse import quote

import pytest

from test_py_support import import_dk  # noqa: E402
dkpy = import_dk()
import dkharness

PRIMS = "delta-golden/data-reader-primitives"
DV = "delta-kernel-defaults/basic-dv-no-checkpoint"
V2 = "delta-golden/v2-checkpoint-json"


def expected_rows(case):
    with open(dkharness.testdata_dir() / f"{case}.expected.jsonl") as f:
        return sum(1 for _ in f)


def commit0(t):
    return t / "_delta_log" / "00000000000000000000.json"


def rewrite_add_path(t, old_name, new_path):
    """Rewrites the add action naming old_name in version 0 to new_path (as written)."""
    lines = commit0(t).read_text().splitlines()
    out = []
    for ln in lines:
        a = json.loads(ln)
        if "add" in a and a["add"]["path"] == old_name:
            a["add"]["path"] = new_path
        out.append(json.dumps(a))
    commit0(t).write_text("\n".join(out) + "\n")


@pytest.fixture
def prims(tmp_path):
    """(table, outside dir, the moved file's name): part-00001 moved to a sibling of the root."""
    t = dkharness.copy_table(PRIMS, tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (name,) = [p.name for p in t.glob("part-00001-*.parquet")]
    shutil.move(t / name, outside / name)
    return t, outside, name


def scan_count(dk, t, *extra):
    rc, out, err = dk("scan", t, *extra)
    return rc, len(out.splitlines()), err


def outside_forms(t, outside, name):
    rel = "../outside/" + name
    return {
        "dotdot": rel,
        "dotdot-encoded": "..%2Foutside%2F" + name,
        "dotdot-inner": "sub/../../outside/" + name,
        "absolute": str(outside / name),
        "file-uri": "file://" + quote(str(outside / name)),
        "file-uri-short": "file:" + quote(str(outside / name)),
        "file-localhost": "file://localhost" + quote(str(outside / name)),
    }


@pytest.mark.parametrize("form", ["dotdot", "dotdot-encoded", "dotdot-inner", "absolute",
                                  "file-uri", "file-uri-short", "file-localhost"])
def test_data_file_outside_root_is_refused_by_default(dk, prims, form):
    t, outside, name = prims
    (t / "sub").mkdir()  # sub/../.. resolves through it
    rewrite_add_path(t, name, outside_forms(t, outside, name)[form])
    n = expected_rows(PRIMS)
    # turned off, the table reads (the path resolves to the moved file): the corpus's 11 rows
    rc, rows, err = scan_count(dk, t, "--no-confine-paths")
    assert (rc, rows) == (0, n), err
    rc, rows, err = scan_count(dk, t)
    assert rc == 1, (rc, err)
    assert "outside the table root" in err and name in err, err
    # the binding: on by default, confine_paths=False for shallow clones
    with pytest.raises((dkpy.DkError, OSError), match="outside the table root"):
        dkpy.Table(str(t)).snapshot().scan().to_pyarrow()
    assert dkpy.Table(str(t), confine_paths=False).snapshot().scan().to_pyarrow().num_rows == n


def test_absolute_paths_inside_the_root_still_work(dk, prims):
    t, outside, name = prims
    shutil.move(outside / name, t / name)
    (other,) = [p.name for p in t.glob("part-00000-*.parquet")]
    rewrite_add_path(t, name, str(t.resolve() / name))
    rewrite_add_path(t, other, "file://" + quote(str(t.resolve() / other)))
    rc, rows, err = scan_count(dk, t)
    assert (rc, rows) == (0, expected_rows(PRIMS)), err
    assert dkpy.Table(str(t)).snapshot().scan().to_pyarrow().num_rows == expected_rows(PRIMS)


def test_symlink_leading_out_is_refused(dk, prims):
    t, outside, name = prims
    os.symlink(outside / name, t / name)  # relative add path, absolute symlink out
    rc, rows, err = scan_count(dk, t, "--no-confine-paths")
    assert (rc, rows) == (0, expected_rows(PRIMS)), err
    rc, _, err = scan_count(dk, t)
    assert rc == 1 and "symlink leads outside the table root" in err, err
    os.unlink(t / name)
    os.symlink(os.path.join("..", "outside", name), t / name)  # relative symlink out
    rc, _, err = scan_count(dk, t)
    assert rc == 1 and "outside the table root" in err, err
    # a symlink that stays inside the root is fine, relative or absolute
    os.unlink(t / name)
    (t / "data").mkdir()
    shutil.move(outside / name, t / "data" / name)
    os.symlink(os.path.join("data", name), t / name)
    rc, rows, err = scan_count(dk, t)
    assert (rc, rows) == (0, expected_rows(PRIMS)), err
    os.unlink(t / name)
    os.symlink(t.resolve() / "data" / name, t / name)
    rc, rows, err = scan_count(dk, t)
    assert (rc, rows) == (0, expected_rows(PRIMS)), err


def test_root_reached_through_a_symlink_still_reads(dk, prims, tmp_path):
    t, outside, name = prims
    shutil.move(outside / name, t / name)
    link = tmp_path / "link-to-table"
    os.symlink(t, link)
    rc, rows, err = scan_count(dk, link)
    assert (rc, rows) == (0, expected_rows(PRIMS)), err


def test_remote_file_uri_and_relative_file_uri_refused_either_way(dk, prims):
    t, outside, name = prims
    rewrite_add_path(t, name, "file://otherhost" + quote(str(outside / name)))
    for extra in ((), ("--no-confine-paths",)):
        rc, _, err = scan_count(dk, t, *extra)
        assert rc == 1 and "otherhost" in err, err
    rewrite_add_path(t, "file://otherhost" + quote(str(outside / name)), "file:../outside/" + name)
    for extra in ((), ("--no-confine-paths",)):
        rc, _, err = scan_count(dk, t, *extra)
        assert rc == 1 and "invalid file URI" in err, err


@pytest.mark.parametrize("bad", ["a%00b.parquet", "a%01b.parquet", "a%7Fb.parquet",
                                 "a\u0000b.parquet", "a\u001fb.parquet"])
def test_control_bytes_in_a_path_are_corrupt(dk, prims, bad):
    t, outside, name = prims
    rewrite_add_path(t, name, bad)
    for cmd in (("files", t), ("scan", t, "--no-confine-paths")):
        rc, _, err = dk(*cmd)
        assert rc == 1 and "control byte" in err, err
    with pytest.raises(dkpy.CorruptTable, match="control byte"):
        dkpy.Table(str(t), confine_paths=False).snapshot()


def dv_table(tmp_path):
    """basic-dv-no-checkpoint and rewrite(p): its 'u' DV descriptors become 'p' (path) ones
    naming p; returns (table, its DV file, rewrite)."""
    t = dkharness.copy_table(DV, tmp_path)
    (dvf,) = t.glob("deletion_vector_*.bin")
    c1 = t / "_delta_log" / "00000000000000000001.json"
    original = c1.read_text()

    def rewrite(p):
        out = []
        for ln in original.splitlines():
            a = json.loads(ln)
            for k in ("add", "remove"):
                d = a.get(k, {}).get("deletionVector")
                if d and d["storageType"] == "u":
                    d["storageType"], d["pathOrInlineDv"] = "p", p
            out.append(json.dumps(a))
        c1.write_text("\n".join(out) + "\n")
    return t, dvf, rewrite


def test_dv_path_outside_root_refused_and_relative_resolves_against_the_table(dk, tmp_path,
                                                                              monkeypatch):
    t, dvf, rewrite = dv_table(tmp_path)
    n = expected_rows(DV)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    moved = outside / dvf.name
    shutil.copy(dvf, moved)
    rewrite("file://" + quote(str(moved)))
    rc, rows, err = scan_count(dk, t, "--no-confine-paths")
    assert (rc, rows) == (0, n), err
    rc, _, err = scan_count(dk, t)
    assert rc == 1 and "outside the table root" in err and dvf.name in err, err
    rewrite("../elsewhere/" + dvf.name)
    rc, _, err = scan_count(dk, t)
    assert rc == 1 and "outside the table root" in err, err
    # a relative 'p' path is resolved against the table root, never the working directory:
    # run from `elsewhere` (which holds a file of that name) with the table's own DV removed
    rewrite(dvf.name)
    rc, rows, err = scan_count(dk, t)
    assert (rc, rows) == (0, n), err
    monkeypatch.chdir(outside)
    os.unlink(dvf)
    rc, _, err = scan_count(dk, t, "--no-confine-paths")
    assert rc == 1 and str(t.resolve()) in err, err


def test_sidecars_must_live_in_the_sidecars_directory(dk, tmp_path):
    """A V2 checkpoint whose sidecar is moved to _delta_log/ (outside _sidecars/) and named by
    '../<name>': refused when confined, read when not."""
    t = dkharness.copy_table(V2, tmp_path)
    sc = t / "_delta_log" / "_sidecars"
    if not sc.is_dir():
        pytest.skip("no sidecars in this table")
    tops = sorted((t / "_delta_log").glob("*.checkpoint.*.json"))
    assert tops, "expected a JSON V2 checkpoint"
    top = tops[-1]
    lines = top.read_text().splitlines()
    out = []
    for ln in lines:
        a = json.loads(ln)
        if "sidecar" in a:
            name = a["sidecar"]["path"]
            shutil.move(sc / name, t / "_delta_log" / name)
            a["sidecar"]["path"] = "../" + name
        out.append(json.dumps(a))
    top.write_text("\n".join(out) + "\n")
    rc, rows, err = scan_count(dk, t, "--no-confine-paths")
    assert rc == 0, err
    rc, _, err = scan_count(dk, t)
    assert rc == 1 and "_sidecars" in err and "outside the table root" in err, err


def test_sql_connector_confines_by_default(dk, prims):
    t, outside, name = prims
    rewrite_add_path(t, name, "../outside/" + name)
    rc, out, err = dk("sql", f"SELECT count(*) AS n FROM delta_scan('{t}')", "--format", "jsonl")
    assert rc == 1 and "outside the table root" in err, (rc, out, err)
    rc, out, err = dk("sql", f"CREATE VIRTUAL TABLE y USING delta('{t}', confine_paths=0); "
                      "SELECT count(*) AS n FROM y", "--format", "jsonl")
    assert rc == 0, err
    assert json.loads(out.splitlines()[-1]) == {"n": expected_rows(PRIMS)}
