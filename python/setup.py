"""Builds dk._dk, the CPython extension over libdk.

The extension links the static library ``libdk_static.a`` of a CMake build of this repository
(so the installed module is self-contained: no libdk.so to find at run time) plus the system
libraries libdk uses (pkg-config: zstd snappy lz4 zlib libdeflate brotli, libcurl and expat when
the library has the S3 backend; roaring, pthread, m).

    make build && .venv/bin/python -m pip install ./python      # DK_BUILD=build (default)
    DK_BUILD=build-asan ... pip install ./python                # the ASan+UBSan build

DK_BUILD is the CMake build directory, absolute or relative to the repository root. The scan
and expression layers are compiled in only when the library defines their symbols
(``dk_scan_new``, ``dk_expr_parsen``); ``dk.HAVE_SCAN`` tells which.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def build_dir() -> Path:
    b = Path(os.environ.get("DK_BUILD", "build"))
    return b if b.is_absolute() else REPO / b


def pkg_config(*args: str) -> list:
    out = subprocess.run(["pkg-config", *args], check=True, capture_output=True, text=True)
    return out.stdout.split()


def defined_symbols(lib: Path) -> set:
    nm = shutil.which("nm") or "nm"
    out = subprocess.run([nm, "-g", "--defined-only", str(lib)], check=True,
                         capture_output=True, text=True).stdout
    return {ln.split()[-1] for ln in out.splitlines() if re.match(r"^[0-9a-f]+ [A-Z] ", ln)}


def cmake_cache(bdir: Path) -> dict:
    cache = {}
    p = bdir / "CMakeCache.txt"
    if p.exists():
        for ln in p.read_text(errors="replace").splitlines():
            m = re.match(r"^([A-Za-z0-9_]+):[A-Z]+=(.*)$", ln)
            if m:
                cache[m.group(1)] = m.group(2)
    return cache


BUILD = build_dir()
LIB = BUILD / "libdk_static.a"
if not LIB.exists():
    raise SystemExit(f"dk: {LIB} not found; run `make build` first (or set DK_BUILD)")

syms = defined_symbols(LIB)
have_expr = "dk_expr_parsen" in syms and (REPO / "include/dk/expr.h").exists()
have_scan = have_expr and "dk_scan_new" in syms and "dk_scan_read" in syms
sanitize = cmake_cache(BUILD).get("DK_SANITIZE", "OFF").upper() in ("ON", "1", "TRUE", "YES")

deps = ["libzstd", "snappy", "liblz4", "zlib", "libdeflate", "libbrotlidec", "libbrotlienc"]
if "dk_s3__run" in syms:  # built with the S3 backend (DK_WITH_S3): libcurl and expat
    deps += ["libcurl", "expat"]
dep_libs = pkg_config("--libs", *deps)
warn = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-Wshadow", "-Wstrict-prototypes",
        "-Wmissing-prototypes", "-Wvla", "-Wformat=2", "-Wundef", "-Wpointer-arith",
        "-Wwrite-strings", "-Wno-unused-parameter", "-Wno-missing-field-initializers",
        "-Wno-cast-function-type"]
san = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"] if sanitize else []

(HERE / "dk" / "_build_info.py").write_text(
    "# written by setup.py\n"
    f"BUILD_DIR = {str(BUILD)!r}\n"
    "LINKAGE = 'static'\n"
    f"SANITIZE = {sanitize!r}\n")

ext = Extension(
    "dk._dk",
    sources=["src/dkmodule.c"],
    include_dirs=[str(REPO / "include")],
    define_macros=[("DK_PY_HAVE_SCAN", "1" if have_scan else "0"),
                   ("DK_PY_HAVE_EXPR", "1" if have_expr else "0")],
    extra_compile_args=warn + san,
    extra_objects=[str(LIB)],
    # the version script keeps libdk's symbols private to the module (no clash with another libdk)
    extra_link_args=dep_libs + ["-lroaring", "-lpthread", "-lm",
                                f"-Wl,--version-script={HERE / 'src' / 'exports.map'}"] + san,
    depends=[str(LIB), str(HERE / "src" / "exports.map")] + [str(p) for p in (REPO / "include/dk").rglob("*.h")],
)



class always_build_ext(build_ext):
    """Recompiles every time: the same source builds differently per DK_BUILD (ASan or not)."""

    def finalize_options(self):
        super().finalize_options()
        self.force = True


setup(packages=["dk"], ext_modules=[ext], cmdclass={"build_ext": always_build_ext})
