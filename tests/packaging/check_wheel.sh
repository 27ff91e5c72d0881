#!/usr/bin/env bash
# check_wheel.sh — the Python package as a user gets it, from a clean clone of this repository
# (its committed state): `python -m build python` in a fresh venv writes the source archive and
# then a wheel built from that archive alone (libdk compiled by CMake inside it, dependencies
# linked statically where Debian ships static libraries); the wheel is installed into a second
# fresh venv and the binding tests (tests/python/test_py_*.py) run against it.
# Run by `make test-packaging` (.ci/run). Needs the network to PyPI (or pip's cache).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
testdata=${DK_TESTDATA:-$(cd "$repo/../shared/testdata" && pwd)}
py=${PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git clone -q "$repo" "$tmp/src"
echo "check_wheel: clean clone at $(git -C "$tmp/src" rev-parse --short HEAD)"

"$py" -m venv "$tmp/build-venv"
"$tmp/build-venv/bin/pip" install -q --disable-pip-version-check \
  "$(grep -E '^build==' "$repo/requirements-dev.txt")"
t0=$(date +%s)
"$tmp/build-venv/bin/python" -m build --outdir "$tmp/dist" "$tmp/src/python" >"$tmp/build.log" 2>&1 ||
  { tail -60 "$tmp/build.log"; exit 1; }
ls -l "$tmp/dist"
echo "check_wheel: sdist and wheel built in $(( $(date +%s) - t0 ))s"
sdist=$(ls "$tmp"/dist/*.tar.gz)
tar -tzf "$sdist" >"$tmp/sdist.txt"
grep -q '/libdk/src/' "$tmp/sdist.txt" || { echo "check_wheel: sdist lacks libdk sources"; exit 1; }
whl=$(ls "$tmp"/dist/*.whl)

"$py" -m venv "$tmp/test-venv"
"$tmp/test-venv/bin/pip" install -q --disable-pip-version-check "$whl" -r "$repo/requirements-dev.txt"
so=$(ls "$tmp"/test-venv/lib/python*/site-packages/dk/_dk*.so)
# The module's own NEEDED entries (ldd would also list what libcurl itself links, e.g. its zstd).
needed=$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
echo "check_wheel: $(basename "$so") needs: $needed"
if printf '%s\n' $needed | grep -Eq '^lib(zstd|snappy|lz4|z|deflate|brotli[a-z]*|pcre2-8)\.so'; then
  echo "check_wheel: a dependency with a static archive is linked dynamically"; exit 1
fi
cd "$tmp/src"
DK_TESTDATA="$testdata" "$tmp/test-venv/bin/python" -c 'import dk, sys; print("check_wheel: import dk from", dk.__file__); sys.exit("site-packages" not in dk.__file__)'
DK_TESTDATA="$testdata" "$tmp/test-venv/bin/python" -m pytest -q -p no:cacheprovider tests/python/test_py_*.py
