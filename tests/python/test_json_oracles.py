"""The JSON oracle files used by the C unit tests are exactly what CPython produces.

tests/unit/data/doubles_repr.txt (CPython float repr, read by test_json_write.c) and
tests/unit/data/golden_json_canon.txt (CPython json decoding of every Delta commit line of the
shared corpus, read by test_json_golden.c) are regenerated into a temp dir and compared."""
import filecmp
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gen_doubles_repr  # noqa: E402
import gen_golden_json_canon  # noqa: E402


def test_doubles_repr_oracle_is_current(tmp_path):
    out = tmp_path / "doubles_repr.txt"
    gen_doubles_repr.main(str(out))
    assert filecmp.cmp(out, gen_doubles_repr.OUT, shallow=False)


def test_golden_json_canon_oracle_is_current(tmp_path):
    out = tmp_path / "golden_json_canon.txt"
    gen_golden_json_canon.main(str(out))
    assert filecmp.cmp(out, gen_golden_json_canon.OUT, shallow=False)
