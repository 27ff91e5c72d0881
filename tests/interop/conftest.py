"""pytest set-up for the interop oracle (marker `interop`, session fixture that builds the tables).

The tables and oracle files are built once into $DK_INTEROP_DIR (default: <repo>/build/interop) by
tests/interop/build.py, which is idempotent, so later runs only pay for what is missing.
"""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "interop: checks against real Delta writers/readers (Spark, delta-rs); "
                   "needs scripts/install_spark.sh")


def interop_dir():
    return os.environ.get("DK_INTEROP_DIR") or os.path.join(REPO, "build", "interop")


@pytest.fixture(scope="session")
def oracle_dir():
    try:
        import pyspark  # noqa: F401
        import delta  # noqa: F401
    except ImportError:
        pytest.skip("pyspark/delta-spark not installed (run scripts/install_spark.sh)")
    out = interop_dir()
    r = subprocess.run([sys.executable, os.path.join(HERE, "build.py"), out],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1200)
    if r.returncode != 0:
        pytest.fail("interop build failed:\n" + r.stdout[-6000:])
    return out
