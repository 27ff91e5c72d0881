"""`dk describe/files/history --json` against delta-rs (the `deltalake` package) on the real
Delta tables of ../shared/testdata: version, active file set, protocol, partition columns,
properties and history must agree. Tables are copied to a temp dir before any mutation."""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

deltalake = pytest.importorskip("deltalake")

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("DK_TESTDATA", ROOT.parent / "shared" / "testdata"))
DK = ROOT / os.environ.get("DK_BUILD", "build") / "dk"
MANIFEST = json.loads((DATA / "manifest.json").read_text())


def tables():
    seen = []
    for c in MANIFEST["cases"]:
        if c["kind"] in ("read", "snapshot") and c["table"] not in seen:
            seen.append(c["table"])
    return seen


def dk(*args, check=True):
    p = subprocess.run([str(DK), *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"dk {' '.join(args)} failed: {p.stderr}")
    return p


def rs_table(path):
    try:
        return deltalake.DeltaTable(str(path))
    except Exception as e:  # delta-rs cannot load it: no oracle
        pytest.skip(f"delta-rs cannot load {path}: {e}")


def rel(root, uri):
    p = uri[7:] if uri.startswith("file://") else uri  # delta-rs gives decoded local paths
    p = os.path.realpath(p)  # delta-rs resolves symlinks in the root; compare resolved paths
    r = os.path.realpath(str(root)).rstrip("/") + "/"
    return p[len(r):] if p.startswith(r) else p


@pytest.mark.skipif(not DK.exists(), reason="dk not built")
@pytest.mark.parametrize("table", tables())
def test_describe_and_files_match_delta_rs(table):
    root = DATA / table
    t = rs_table(root)
    try:
        rs_files = sorted(rel(root, u) for u in t.file_uris())
    except Exception as e:
        pytest.skip(f"delta-rs cannot list files of {table}: {e}")
    d = json.loads(dk("describe", str(root), "--json").stdout)
    assert d["version"] == t.version()
    pr = t.protocol()
    assert d["protocol"]["minReaderVersion"] == pr.min_reader_version
    assert d["protocol"]["minWriterVersion"] == pr.min_writer_version
    if pr.reader_features is not None:
        assert sorted(d["protocol"].get("readerFeatures", [])) == sorted(pr.reader_features)
    if pr.writer_features is not None:
        assert sorted(d["protocol"].get("writerFeatures", [])) == sorted(pr.writer_features)
    md = t.metadata()
    assert d["id"] == md.id
    assert d["partition_columns"] == list(md.partition_columns)
    assert d["properties"] == dict(md.configuration)
    f = json.loads(dk("files", str(root), "--json").stdout)
    assert f["version"] == t.version()
    assert sorted(x["path"] for x in f["files"]) == rs_files
    assert d["num_files"] == len(rs_files)
    for app, v in d["app_transactions"].items():
        assert t.transaction_version(app) == v


@pytest.mark.skipif(not DK.exists(), reason="dk not built")
@pytest.mark.parametrize("table", ["delta-golden/snapshot-data2-deleted",
                                   "delta-golden/time-travel-start-start20-start40",
                                   "delta-golden/basic-with-inserts-merge"])
def test_time_travel_and_history_match_delta_rs(table):
    root = DATA / table
    t = rs_table(root)
    for v in range(t.version() + 1):
        tv = deltalake.DeltaTable(str(root), version=v)
        f = json.loads(dk("files", str(root), "--version", str(v), "--json").stdout)
        assert sorted(x["path"] for x in f["files"]) == sorted(rel(root, u) for u in tv.file_uris())
    h = json.loads(dk("history", str(root), "--json").stdout)
    rs = t.history()
    assert [e["version"] for e in h] == [e["version"] for e in rs]
    assert [e["commitInfo"].get("operation") for e in h] == [e.get("operation") for e in rs]
    h2 = json.loads(dk("history", str(root), "--limit", "1", "--json").stdout)
    assert len(h2) == 1 and h2[0]["version"] == t.version()


@pytest.mark.skipif(not DK.exists(), reason="dk not built")
def test_only_checkpoint_files_without_json_below_checkpoint(tmp_path):
    src = DATA / "delta-golden/only-checkpoint-files"
    dst = tmp_path / "t"
    shutil.copytree(src, dst)
    want = json.loads(dk("files", str(dst), "--json").stdout)
    for v in (0, 1):
        (dst / "_delta_log" / f"{v:020d}.json").unlink()
    got = json.loads(dk("files", str(dst), "--json").stdout)
    assert got["version"] == want["version"]
    assert sorted(x["path"] for x in got["files"]) == sorted(x["path"] for x in want["files"])
    t = rs_table(src)
    assert sorted(x["path"] for x in got["files"]) == sorted(rel(src, u) for u in t.file_uris())


@pytest.mark.skipif(not DK.exists(), reason="dk not built")
def test_corrupted_last_checkpoint_falls_back(tmp_path):
    dst = tmp_path / "t"
    shutil.copytree(DATA / "delta-golden/corrupted-last-checkpoint", dst)
    (dst / "_delta_log" / "_last_checkpoint").write_text('{"version":10,"si')
    exp = json.loads((DATA / "delta-golden/corrupted-last-checkpoint.expected.json").read_text())
    got = json.loads(dk("files", str(dst), "--json").stdout)
    assert got["version"] == exp["version"]
    assert sorted(x["path"] for x in got["files"]) == sorted(exp["active_files"])


@pytest.mark.skipif(not DK.exists(), reason="dk not built")
def test_errors_are_clean():
    p = dk("describe", str(DATA / "delta-golden/versions-not-contiguous"), check=False)
    assert p.returncode == 1 and "version(s) 1 " in p.stderr
    p = dk("describe", str(DATA / "delta-golden/no-delta-log-folder"), check=False)
    assert p.returncode == 1 and "not a Delta table" in p.stderr
    p = dk("describe", str(DATA / "delta-golden/deltalog-invalid-protocol-version"), check=False)
    assert p.returncode == 1 and "unsupported" in p.stderr
