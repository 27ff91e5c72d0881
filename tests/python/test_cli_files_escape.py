"""`dk files --json` string escaping: paths, partition values and stats holding quotes,
backslashes, control characters, non-ASCII and runs of every length around the writer's
8-byte steps must come back unchanged through Python's json module (an exact round trip).
Paths hold no control characters: a decoded path with one is corrupt (issue 18, item 3;
test_path_confinement.py), so those stay in partition values and stats."""
import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DK = ROOT / os.environ.get("DK_BUILD", "build") / "dk"

NASTY = ['a"b', "back\\slash", "tab\tnl\ncr\r", "\x01\x1f\x7f", "ünïcødé ✓ 𝄞", '"' * 9,
         "\\" * 17, "x" * 7 + '"', "y" * 8 + "\\", "z" * 15 + "\x02", "plain-" * 5]


def test_escapes_round_trip(tmp_path):
    log = tmp_path / "_delta_log"
    log.mkdir()
    schema = json.dumps({"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "p", "type": "string", "nullable": True, "metadata": {}}]})
    actions = [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
               {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}},
                             "schemaString": schema, "partitionColumns": ["p"],
                             "configuration": {}, "createdTime": 0}}]
    want = {}
    for i, s in enumerate(NASTY):
        for cut in range(0, len(s) + 1, 3):
            path = f"f{i}-{cut}-" + "".join(c for c in s[:cut] if c >= " " and c != "\x7f")
            path += ".parquet"
            stats = json.dumps({"numRecords": i, "minValues": {"p": s[cut:]}})
            want[path] = (s, stats)
            actions.append({"add": {"path": path, "partitionValues": {"p": s}, "size": i,
                                    "modificationTime": 0, "dataChange": True, "stats": stats}})
    (log / "00000000000000000000.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    p = subprocess.run([str(DK), "files", str(tmp_path), "--json"], capture_output=True)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout.decode("utf-8"))["files"]
    assert len(got) == len(want)
    for f in got:
        s, stats = want[f["path"]]
        assert f["partition_values"] == {"p": s}
        assert f["stats"] == stats
