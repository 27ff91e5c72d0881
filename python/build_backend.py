"""PEP 517 backend of the dk Python package: scikit-build-core, plus one step for source
archives.

python/CMakeLists.txt builds libdk from the C sources of the repository around python/. A
source archive of python/ alone would not have them, so build_sdist first copies what the
libdk build needs (CMakeLists.txt, cmake/, include/, src/) into python/libdk/, where
python/CMakeLists.txt looks first, and removes the copy afterwards. Everything else is
scikit-build-core's.
"""

import shutil
from pathlib import Path

from scikit_build_core import build as _skb
from scikit_build_core.build import *  # noqa: F401,F403  (the other PEP 517 hooks)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
LIBDK = HERE / "libdk"
PARTS = ["CMakeLists.txt", "cmake", "include", "src"]


def build_sdist(sdist_directory, config_settings=None):
    if LIBDK.exists() or not (REPO / "CMakeLists.txt").exists():
        return _skb.build_sdist(sdist_directory, config_settings)  # already self-contained
    try:
        LIBDK.mkdir()
        for part in PARTS:
            src = REPO / part
            if src.is_dir():
                shutil.copytree(src, LIBDK / part, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(src, LIBDK / part)
        return _skb.build_sdist(sdist_directory, config_settings)
    finally:
        shutil.rmtree(LIBDK, ignore_errors=True)
