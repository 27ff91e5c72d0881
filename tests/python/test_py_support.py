"""Shared helpers of the Python-binding tests (tests/python/test_py_*.py) and their ASan re-run.

The binding is the installed ``dk`` package (``pip install ./python`` after ``make build``;
``make test`` does both). When that package was built against the ASan+UBSan library
(``make test SANITIZE=1``), importing it into an interpreter that was not started with
``LD_PRELOAD=libasan.so`` would abort the process, so the binding tests skip themselves in such
an interpreter and ``test_asan_rerun`` runs them all again in a child interpreter started with
the ASan runtime preloaded (leak detection off there: CPython and pyarrow keep memory until
exit by design; dk's own leaks are checked exactly by ``dk._dk._live_allocations()`` and by
``test_py_leaks.py`` under LSan with a dk-only workload).
"""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

import dkharness

HERE = Path(__file__).resolve().parent
ASAN_CHILD_ENV = "DK_PY_ASAN_CHILD"


def dk_package_dir() -> Path | None:
    spec = importlib.util.find_spec("dk")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def dk_build_info() -> dict:
    """The ``dk/_build_info.py`` written by python/CMakeLists.txt, read without importing the
    extension."""
    d = dk_package_dir()
    info = {"BUILD_DIR": None, "LINKAGE": None, "SANITIZE": False}
    if d is not None and (d / "_build_info.py").exists():
        exec((d / "_build_info.py").read_text(), {}, info)
    return info


def asan_preloaded() -> bool:
    return "libasan" in os.environ.get("LD_PRELOAD", "")


def libasan_path() -> str:
    return subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True,
                          text=True, check=True).stdout.strip()


def import_dk():
    """Imports the installed binding for a test module (skips/fails at module level)."""
    if dk_package_dir() is None:
        pytest.fail("the dk Python package is not installed: run "
                    "`.venv/bin/python -m pip install ./python` after `make build` "
                    "(make test does both)", pytrace=False)
    if dk_build_info()["SANITIZE"] and not asan_preloaded():
        pytest.skip("dk was built against the ASan library: the binding tests run in a "
                    "LD_PRELOAD=libasan child interpreter (test_py_support.py::test_asan_rerun)",
                    allow_module_level=True)
    import dk
    return dk


def read_cases() -> list[dict]:
    """Manifest read cases whose table is complete (unique by id)."""
    return [c for c in dkharness.cases("read") if not c.get("incomplete")]


def snapshot_version_arg(case: dict):
    return case["version"] if case.get("version") is not None else None


def sanitizer_env() -> dict:
    env = dict(os.environ)
    env["LD_PRELOAD"] = " ".join(x for x in (libasan_path(), env.get("LD_PRELOAD", "")) if x)
    # CPython and pyarrow keep memory until exit by design, so leak detection is always off
    # here (even when CI exports detect_leaks=1); dk's own leaks are checked exactly elsewhere
    opts = [o for o in env.get("ASAN_OPTIONS", "").split(":") if o and not o.startswith("detect_leaks")]
    env["ASAN_OPTIONS"] = ":".join(opts + ["detect_leaks=0"])
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    env[ASAN_CHILD_ENV] = "1"
    return env


# ---------------------------------------------------------------------------------------------

def test_build_info_matches_package():
    dk = import_dk()
    assert dk.LINKAGE == "static"
    assert dk.__version__.count(".") == 2
    assert hasattr(dk, "Scan") and not hasattr(dk, "HAVE_SCAN")


def test_asan_rerun():
    """Under an ASan build of the binding: every binding test again, with libasan preloaded."""
    if dk_package_dir() is None:
        pytest.fail("the dk Python package is not installed", pytrace=False)
    if not dk_build_info()["SANITIZE"]:
        pytest.skip("the installed dk is not an ASan build (make test SANITIZE=1 builds one)")
    if asan_preloaded():
        pytest.skip("already running with the ASan runtime preloaded")
    files = sorted(str(p) for p in HERE.glob("test_py_*.py") if p.name != Path(__file__).name)
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files]
    p = subprocess.run(argv, capture_output=True, text=True, env=sanitizer_env(),
                       cwd=str(HERE.parents[1]), timeout=1800)
    out = p.stdout + p.stderr
    dkharness.check_process(argv, p.returncode, p.stderr)
    assert p.returncode == 0, out[-6000:]
