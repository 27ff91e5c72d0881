"""Log compaction files (PROTOCOL.md "Log Compaction Files", x.y.compacted.json) give the same
snapshot as the commits x..y they stand for, whichever way the writer laid them out.

For every table of the shared corpus (its _delta_log copied to a temp dir; no data file is
read), compaction files are written beside the commits in two styles:

* ``reconciled``: the actions of x..y reconciled as the protocol describes (one action per
  file key (path, deletionVector.uniqueId), the last txn per appId, the last domainMetadata
  per domain, the last metaData and protocol; commitInfo dropped), adds first;
* ``newest_first``: every action of x..y unreconciled, newest first (the commits from y down
  to x, each commit's lines from last to first), as some writers produce them: a file added
  at x and removed at y then appears twice, its remove before its add;

and in three layouts (one file over all commits; consecutive pairs; overlapping triples).
The oracle is the same log without the compaction files: at every version dk can load, the
snapshot read with them (active files with every field, tombstones, app transactions,
protocol, metadata) must equal the snapshot read after deleting them. delta-rs reads the
compacted logs too, at the latest version and one version in the middle of each table that
it can open (the active file paths must match). Before the fix in src/log/commit.c the
newest_first cases failed: a file whose remove came before its add in the compaction file
came back as live.
"""

import json
import os
import shutil
from pathlib import Path
from urllib.parse import unquote

import pytest

import dkharness
from test_py_support import import_dk

dk = import_dk()

TESTDATA = dkharness.testdata_dir()
FULL = os.environ.get("DK_COMPACTION_FULL") == "1"  # delta-rs at every version too


def _log_tables():
    out = []
    for log in sorted(TESTDATA.rglob("_delta_log")):
        commits = sorted(int(p.name[:20]) for p in log.iterdir()
                         if p.name.endswith(".json") and len(p.name) == 25 and p.name[:20].isdigit())
        if len(commits) >= 2:
            out.append(pytest.param(log.parent, id=str(log.parent.relative_to(TESTDATA))))
    return out


LOG_TABLES = _log_tables()


def _commits(log: Path) -> list[int]:
    return sorted(int(p.name[:20]) for p in log.iterdir()
                  if p.name.endswith(".json") and len(p.name) == 25 and p.name[:20].isdigit())


def _runs(versions: list[int]) -> list[list[int]]:
    """Maximal runs of consecutive versions."""
    runs, cur = [], []
    for v in versions:
        if cur and v != cur[-1] + 1:
            runs.append(cur)
            cur = []
        cur.append(v)
    if cur:
        runs.append(cur)
    return runs


def _ranges(versions: list[int], layout: str) -> list[tuple[int, int]]:
    out = []
    for run in _runs(versions):
        if len(run) < 2:
            continue
        if layout == "whole":
            out.append((run[0], run[-1]))
        elif layout == "pairs":
            out += [(run[i], run[i + 1]) for i in range(0, len(run) - 1, 2)]
        elif layout == "triples":
            out += [(run[i], run[i + 2]) for i in range(0, len(run) - 2)]
    return out


def _read_actions(log: Path, v: int) -> list[dict]:
    text = (log / f"{v:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _dv_id(dv) -> str | None:
    if not dv:
        return None
    uid = dv["storageType"] + dv["pathOrInlineDv"]
    if dv.get("offset") is not None:
        uid += "@" + str(dv["offset"])
    return uid


def _file_key(path: str) -> str:
    """A path as reconciliation compares it: URL-decoded, a file: URI's authority dropped."""
    p = unquote(path)
    if p.startswith("file://"):
        p = p[7:]
        p = p[p.index("/"):] if "/" in p else p
    elif p.startswith("file:"):
        p = p[5:]
    return p


def _reconciled(log: Path, lo: int, hi: int) -> list[dict]:
    files, txns, domains, single = {}, {}, {}, {}
    for v in range(lo, hi + 1):
        for line in _read_actions(log, v):
            for kind, a in line.items():
                if a is None:
                    continue
                if kind in ("add", "remove"):
                    files[(_file_key(a["path"]), _dv_id(a.get("deletionVector")))] = (kind, a)
                elif kind == "txn":
                    txns[a["appId"]] = a
                elif kind == "domainMetadata":
                    domains[a["domain"]] = a
                elif kind in ("metaData", "protocol"):
                    single[kind] = a
                # commitInfo, cdc and unknown actions have no place in a reconciled state
    out = [{k: a} for k, a in single.items()]
    out += [{"add": a} for kind, a in files.values() if kind == "add"]
    out += [{"remove": a} for kind, a in files.values() if kind == "remove"]
    out += [{"txn": a} for a in txns.values()]
    out += [{"domainMetadata": a} for a in domains.values()]
    return out


def _newest_first(log: Path, lo: int, hi: int) -> list[dict]:
    out = []
    for v in range(hi, lo - 1, -1):
        out += [line for line in reversed(_read_actions(log, v)) if "commitInfo" not in line]
    return out


def _write_compactions(log: Path, style: str, layout: str) -> list[tuple[int, int]]:
    ranges = _ranges(_commits(log), layout)
    for lo, hi in ranges:
        acts = _reconciled(log, lo, hi) if style == "reconciled" else _newest_first(log, lo, hi)
        (log / f"{lo:020d}.{hi:020d}.compacted.json").write_text(
            "".join(json.dumps(a, separators=(",", ":")) + "\n" for a in acts))
    return ranges


def _state(root: Path, version: int):
    """Everything a snapshot says, or the error class name when dk refuses the version."""
    try:
        s = dk.Table(str(root)).snapshot(version=version)
    except dk.DkError as e:
        return ("error", type(e).__name__)
    files = sorted(json.dumps(f, sort_keys=True) for f in s.files())
    tombs = sorted(json.dumps(t, sort_keys=True) for t in s.tombstones())
    return {"version": s.version, "files": files, "tombstones": tombs,
            "transactions": s.transactions(), "protocol": s.protocol,
            "metadata": s.metadata, "properties": s.properties}


def _copy_log(src: Path, dest: Path) -> Path:
    root = dest / src.name
    shutil.copytree(src / "_delta_log", root / "_delta_log")
    return root


@pytest.mark.parametrize("style", ["reconciled", "newest_first"])
@pytest.mark.parametrize("layout", ["whole", "pairs", "triples"])
@pytest.mark.parametrize("table", LOG_TABLES)
def test_compaction_equals_commits(table, layout, style, tmp_path):
    plain = _copy_log(table, tmp_path / "plain")
    compacted = _copy_log(table, tmp_path / "compacted")
    ranges = _write_compactions(compacted / "_delta_log", style, layout)
    if not ranges:
        pytest.skip("no run of two consecutive commits for this layout")
    versions = _commits(plain / "_delta_log")
    for v in range(versions[0], versions[-1] + 1):
        want = _state(plain, v)  # a refused version must be refused alike
        got = _state(compacted, v)
        assert got == want, f"version {v} with compaction files {ranges}"


deltalake = None
try:
    import deltalake  # noqa: F811
except ImportError:  # pragma: no cover
    pass


def _rs_paths(root: Path, version: int) -> list[str]:
    import pyarrow as pa
    t = deltalake.DeltaTable(str(root), version=version)
    adds = pa.table(t.get_add_actions(flatten=True))  # delta-rs 1.x returns an arro3 table
    return sorted(unquote(p) for p in adds.column("path").to_pylist())  # as written: encoded


@pytest.mark.skipif(deltalake is None, reason="deltalake not installed")
@pytest.mark.parametrize("style", ["reconciled", "newest_first"])
@pytest.mark.parametrize("table", LOG_TABLES)
def test_compaction_matches_delta_rs(table, style, tmp_path):
    compacted = _copy_log(table, tmp_path / "compacted")
    _write_compactions(compacted / "_delta_log", style, "pairs")
    _write_compactions(compacted / "_delta_log", style, "whole")
    versions = _commits(compacted / "_delta_log")
    pick = range(versions[0], versions[-1] + 1) if FULL else sorted(
        {versions[-1], versions[len(versions) // 2]})
    compared = 0
    for v in pick:
        try:
            want = _rs_paths(compacted, v)
        except Exception:  # delta-rs cannot read this table or version: no oracle here
            continue
        s = dk.Table(str(compacted)).snapshot(version=v)
        got = sorted(f["path"] for f in s.files())  # dk decodes the log's paths
        assert got == want, f"version {v}"
        compared += 1
    if not compared:
        pytest.skip("delta-rs reads no version of this table")
