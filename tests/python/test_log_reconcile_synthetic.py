"""Checkpoint + newer commits reconciliation on the P1 benchmark's synthetic table shape
(bench/snapshot_load.py make_table: a Spark-schema checkpoint with adds and tombstones, then
100 JSON commits that remove checkpoint files and add new ones), small enough for a test.

dk appends checkpoint rows without indexing them and drops, at the end, those a newer commit
touched (src/log/actions.c); the oracle is delta-rs (`deltalake`): the active files, their
sizes, modification times and stats (numRecords) must agree at the latest version and at versions between the
checkpoint and the last commit. The 40,000-file table has more checkpoint rows than one
batch of dk's direct checkpoint reader (16,384), so its decoding thread and the thread
collecting the stats pages run beside the rows being applied; it is also read with
`--threads 1`, where everything runs inline."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

deltalake = pytest.importorskip("deltalake")
pytest.importorskip("pyarrow")

ROOT = Path(__file__).resolve().parents[2]
DK = ROOT / os.environ.get("DK_BUILD", "build") / "dk"
sys.path.insert(0, str(ROOT / "bench"))


@pytest.fixture(scope="module", params=[2000, 40000], ids=["2k", "40k"])
def table(request, tmp_path_factory):
    import snapshot_load
    root = tmp_path_factory.mktemp("p1") / "t"
    facts = snapshot_load.make_table(root, request.param, seed=11)
    return root, facts


def dk_files(root, version=None, threads=None):
    args = [str(DK), "files", str(root), "--json"]
    if version is not None:
        args += ["--version", str(version)]
    if threads is not None:
        args += ["--threads", str(threads)]
    p = subprocess.run(args, capture_output=True, text=True, check=True)
    return json.loads(p.stdout)


def rs_files(root, version=None):
    t = deltalake.DeltaTable(str(root), version=version)
    a = t.get_add_actions(flatten=True)
    import pyarrow as pa
    a = pa.table(a).to_pydict()  # delta-rs 1.x returns an arro3 table
    mt = a["modification_time"]
    # delta-rs returns timestamps (datetime) in some versions, ms integers in others
    mt = [int(x.timestamp() * 1000) if hasattr(x, "timestamp") else int(x) for x in mt]
    return t.version(), sorted(zip(a["path"], a["size_bytes"], mt,
                                   (int(n) for n in a["num_records"])))


@pytest.mark.skipif(not DK.exists(), reason="dk not built")
@pytest.mark.parametrize("version", [None, 100, 101, 150, 199])
def test_reconciled_files_match_delta_rs(table, version):
    root, facts = table
    v, want = rs_files(root, version)
    got = dk_files(root, version)
    assert got["version"] == v
    have = sorted((f["path"], f["size"], f["modification_time"],
                   json.loads(f["stats"])["numRecords"]) for f in got["files"])
    assert have == want
    if version is None:
        assert len(have) == facts["live_files"]


@pytest.mark.skipif(not DK.exists(), reason="dk not built")
def test_inline_and_threaded_replay_agree(table):
    """--threads 1 (no helper threads) gives the very same listing, stats text included."""
    root, _ = table
    assert dk_files(root, threads=1) == dk_files(root)
