"""pytest configuration for dk's Python tests: fixtures and markers over tests/python/dkharness.py.

Markers
  @pytest.mark.dk_command("parquet", "cat")  skip (with the reason) when the built dk lacks
                                              that subcommand; fail if dk is not built at all.
Fixtures
  dk            -> dkharness.run_dk (callable)
  manifest      -> the parsed shared manifest.json
  testdata      -> Path of the shared corpus (read-only!)
  table_copy    -> factory: table_copy(case) copies a case's table under tmp_path
  s3_server, s3_corpus, s3_prefix, fault_proxy -> the S3 test server (s3env.py)
"""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import dkharness  # noqa: E402
# the S3 fixtures (one server and one corpus upload per session, see s3env.py)
from s3env import fault_proxy, s3_corpus, s3_prefix, s3_server  # noqa: E402,F401


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "dk_command(*words): needs `dk WORDS...`; skipped while the binary lacks it")


def pytest_report_header(config):
    exe = dkharness.dk_binary()
    return [f"dk binary: {exe}{'' if exe.exists() else ' (missing)'}",
            f"dk testdata: {dkharness.testdata_dir()}"]


def pytest_runtest_setup(item):
    for mark in item.iter_markers(name="dk_command"):
        dkharness.require_dk_command(*mark.args)


@pytest.fixture
def dk():
    return dkharness.run_dk


@pytest.fixture(scope="session")
def manifest():
    return dkharness.load_manifest()


@pytest.fixture(scope="session")
def testdata():
    return dkharness.testdata_dir()


@pytest.fixture
def table_copy(tmp_path):
    def _copy(case):
        return dkharness.copy_table(case, tmp_path)
    return _copy
