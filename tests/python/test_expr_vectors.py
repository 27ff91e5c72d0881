"""The checked-in DuckDB oracle vectors (tests/unit/data/expr_vectors.jsonl) must be exactly
what tests/python/gen_expr_vectors.py produces with the pinned DuckDB: regenerating them is
deterministic, so a change of DuckDB semantics or of the generator shows up here."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
VECTORS = os.path.join(HERE, "..", "unit", "data", "expr_vectors.jsonl")


def test_vectors_are_reproducible(tmp_path):
    out = tmp_path / "v.jsonl"
    subprocess.run([sys.executable, os.path.join(HERE, "gen_expr_vectors.py"), str(out)],
                   check=True)
    assert out.read_bytes() == open(VECTORS, "rb").read()


def test_vectors_shape():
    with open(VECTORS) as f:
        header = json.loads(f.readline())
        cases = [json.loads(line) for line in f if line.strip()]
    n = len(header["rows"])
    assert len(cases) >= 1000
    assert all(len(c["result"]) == n and set(c["result"]) <= set("TFN") for c in cases)
    # the corpus exercises all three truth values
    joined = "".join(c["result"] for c in cases)
    assert {"T", "F", "N"} <= set(joined)
