"""Float columns written by Spark: dk's rows for every comparison at, just above and just below
each file's min and max, NaN and ±0.0 equal Spark SQL's (issue #18 item 6: float statistics
were compared as doubles, so `f = FLOAT '0.3'` skipped the file whose max is 0.3; a NaN literal
on a float column crashed the scan). Oracle: tests/interop/float_oracle.py (delta-spark writes
the table, Spark SQL answers). The predicates run against the whole table (file skipping by
Delta stats, row groups by Parquet statistics, then the row filter) and through splits.
"""
import json
import os
import subprocess
import sys

import pytest

from conftest import interop_dir

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DK = os.path.join(REPO, os.environ.get("DK_BUILD", "build"), "dk")

pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def answers():
    pytest.importorskip("pyspark")
    r = subprocess.run([sys.executable, os.path.join(HERE, "float_oracle.py"), interop_dir()],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1800)
    if r.returncode:
        pytest.fail("float_oracle.py failed:\n" + r.stdout[-6000:])
    with open(os.path.join(interop_dir(), "floats", "answers.json")) as f:
        return json.load(f)


def dk_ids(root, where, *extra):
    p = subprocess.run([DK, "scan", root, "--where", where, "--columns", "id", "--format",
                        "jsonl", *extra], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return sorted(json.loads(l)["id"] for l in p.stdout.splitlines() if l.strip())


def test_float_oracle_covers_the_cases(answers):
    # every file bound is a float's shortest text, and the literal set reaches them
    assert len(answers["file_stats"]) == 5
    assert any(c["dk"] == "f = FLOAT '0.3'" and c["ids"] for c in answers["cases"])
    assert len(answers["cases"]) > 100


@pytest.mark.parametrize("via", ["scan", "splits"])
def test_float_predicates_equal_spark(answers, via):
    extra = ["--via-splits"] if via == "splits" else []
    bad = []
    for c in answers["cases"]:
        got = dk_ids(answers["root"], c["dk"], *extra)
        if got != c["ids"]:
            bad.append((c["dk"], got, c["ids"]))
    assert not bad, bad[:10]
