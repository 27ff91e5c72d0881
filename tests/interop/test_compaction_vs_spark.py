"""Log compaction files against Delta-Spark's answers: for every interop table (written by Spark
and delta-rs), its _delta_log is copied and given x.y.compacted.json files — reconciled, and
unreconciled newest first — in the layouts of tests/python/test_log_compaction.py; at every
version dk's snapshot of the compacted copy (file set, sizes, partition values, stats, DVs)
equals what Spark's own snapshot of the original table was (oracle.json, recorded by
tests/interop/build.py). No data file is read.

Run: .venv/bin/python -m pytest -q -m interop tests/interop   (make test-interop)
"""
import json
import os
import shutil
import sys
import urllib.parse

import pytest

import gen_tables

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "python"))
import dkharness as h  # noqa: E402
import test_log_compaction as lc  # noqa: E402  (the compaction-file writers)

pytestmark = pytest.mark.interop

TABLES = gen_tables.table_names()


@pytest.mark.parametrize("style", ["reconciled", "newest_first"])
@pytest.mark.parametrize("layout", ["whole", "pairs", "triples"])
@pytest.mark.parametrize("name", TABLES)
def test_compacted_log_equals_spark(oracle_dir, name, layout, style, tmp_path):
    with open(os.path.join(oracle_dir, name, "oracle.json"), encoding="utf-8") as f:
        o = json.load(f)
    src = os.path.join(oracle_dir, o["table"], o["table_root"])
    dst = tmp_path / "t"
    shutil.copytree(os.path.join(src, "_delta_log"), dst / "_delta_log")
    if not lc._write_compactions(dst / "_delta_log", style, layout):
        pytest.skip("no run of commits for this layout")
    for snap in o["snapshots"]:
        v = snap["version"]
        rc, out, err = h.run_dk("files", str(dst), "--version", v, "--json")
        assert rc == 0, f"v{v}: {err}"
        mine = {f["path"]: f for f in json.loads(out)["files"]}
        spark = {urllib.parse.unquote(f["path"]): f for f in snap["files"]}
        assert sorted(mine) == sorted(spark), f"v{v}: file sets differ"
        for path, sf in spark.items():
            f = mine[path]
            assert f["size"] == sf["size"], f"v{v} {path}"
            assert f["partition_values"] == sf["partition_values"], f"v{v} {path}"
            if sf["stats"] is not None:
                assert json.loads(f["stats"]) == json.loads(sf["stats"]), f"v{v} {path}"
            assert (f.get("deletion_vector") is None) == (sf["deletion_vector"] is None)
