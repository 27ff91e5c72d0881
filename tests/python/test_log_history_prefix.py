"""History reads a commit's commitInfo from the first 64 KiB of the file when it is there
(src/snapshot/history.c find_commit_info) and falls back to reading the whole file when it is
not. Commits larger than the prefix are written by hand after a delta-rs table's first
commit, with commitInfo first, last, on a line that straddles the prefix's end, and absent;
the oracle is delta-rs's DeltaTable.history(). delta-rs leaves a commit without commitInfo
out of its history and numbers the others by position (so its version numbers shift after
v4 here): its entries are matched to dk's by their commitInfo timestamp instead."""
import json
import os
import subprocess
from pathlib import Path

import pytest

deltalake = pytest.importorskip("deltalake")
pa = pytest.importorskip("pyarrow")

ROOT = Path(__file__).resolve().parents[2]
DK = ROOT / os.environ.get("DK_BUILD", "build") / "dk"
PREFIX = 64 * 1024


def add_line(i):
    return json.dumps({"add": {"path": f"part-{i:06d}-{'x' * 40}.parquet", "partitionValues": {},
                               "size": 1000 + i, "modificationTime": 1700000000000 + i,
                               "dataChange": True}})


def commit_info(version, op):
    return json.dumps({"commitInfo": {"timestamp": 1700000000000 + version, "operation": op,
                                      "operationParameters": {"mode": "Append"},
                                      "readVersion": version - 1, "isBlindAppend": True}})


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    root = tmp_path_factory.mktemp("hist") / "t"
    deltalake.write_deltalake(str(root), pa.table({"x": pa.array([1, 2, 3], pa.int64())}))
    log = root / "_delta_log"
    n = 0

    def adds(k):
        nonlocal n
        lines = [add_line(n + j) for j in range(k)]
        n += k
        return lines

    # v1: commitInfo first (found in the prefix)
    commits = [[commit_info(1, "FIRST")] + adds(1500)]
    # v2: commitInfo last (past the prefix: the whole file is read)
    commits.append(adds(1500) + [commit_info(2, "LAST")])
    # v3: commitInfo on a line straddling the end of the prefix
    body = adds(1500)
    size, k = 0, 0
    while size + len(body[k]) + 1 < PREFIX - 40:
        size += len(body[k]) + 1
        k += 1
    ci = json.loads(commit_info(3, "STRADDLE"))
    ci["commitInfo"]["pad"] = "p" * 200
    commits.append(body[:k] + [json.dumps(ci)] + body[k:])
    # v4: no commitInfo at all
    commits.append(adds(1500))
    for v, lines in enumerate(commits, start=1):
        text = "\n".join(lines) + "\n"
        assert len(text) > PREFIX
        (log / f"{v:020d}.json").write_text(text)
    return root


def test_history_matches_delta_rs(table):
    p = subprocess.run([str(DK), "history", str(table), "--json"], capture_output=True,
                       text=True, check=True)
    got = {e["version"]: e["commitInfo"] for e in json.loads(p.stdout)}
    assert sorted(got) == [0, 1, 2, 3, 4]
    want = []
    for h in deltalake.DeltaTable(str(table)).history():
        h = dict(h)
        h.pop("version")
        want.append(h)
    # one delta-rs entry per commit that has a commitInfo: v0..v3, not v4
    assert len(want) == 4
    by_ts = {h["timestamp"]: h for h in want}
    for v in (0, 1, 2, 3):
        assert got[v] == by_ts[got[v]["timestamp"]], v
    assert [got[v]["operation"] for v in (1, 2, 3)] == ["FIRST", "LAST", "STRADDLE"]
    assert got[4] == {}
