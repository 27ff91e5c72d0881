"""The Python examples of README.md ("## Python") run as tests, in order, sharing one namespace.

TABLE is the golden table the README names; the examples assert their own results (which are
the expected rows of that table in the shared corpus). Blocks that scan are skipped while the
linked library has no scan layer.
"""

import re
from pathlib import Path

import pytest

import dkharness
from test_py_support import import_dk

dk = import_dk()

README = Path(__file__).resolve().parents[2] / "README.md"


def _python_blocks():
    text = README.read_text(encoding="utf-8")
    m = re.search(r"^## Python\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert m, "README.md has no '## Python' section"
    return re.findall(r"^```python\n(.*?)^```", m.group(1), re.S | re.M)


BLOCKS = _python_blocks()


def test_readme_has_examples():
    joined = "\n".join(BLOCKS)
    for needle in ("pa.table(", "duckdb.sql(", "pl.DataFrame(", "snapshot(version="):
        assert needle in joined


def test_readme_examples_run():
    ns = {"TABLE": str(dkharness.testdata_dir() / "delta-golden/basic-with-inserts-overwrite-restore")}
    for i, code in enumerate(BLOCKS):
        exec(compile(code, f"README.md python block {i}", "exec"), ns)
