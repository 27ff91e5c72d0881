#!/usr/bin/env bash
# check_install.sh — the C library as a user installs it, from a clean clone of this repository
# (its committed state): configure and `make install PREFIX=...` into a temporary prefix, then
# check what landed there (libdk.so with its SONAME, libdk.a, headers, dk.pc, the CMake package,
# the dk CLI and its man page) and build two tiny programs against it, one with
# `pkg-config dk` and one with `find_package(dk)` (dk::dk and dk::dk_static), each reading a
# corpus table. Run by `make test-packaging` (.ci/run).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
testdata=${DK_TESTDATA:-$(cd "$repo/../shared/testdata" && pwd)}
table="$testdata/delta-golden/basic-decimal-table"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git clone -q "$repo" "$tmp/src"
echo "check_install: clean clone at $(git -C "$tmp/src" rev-parse --short HEAD)"
cmake -S "$tmp/src" -B "$tmp/build" -G Ninja -DDK_BUILD_TESTS=OFF -DDK_BUILD_BENCH=OFF >/dev/null
make -s -C "$tmp/src" install BUILD="$tmp/build" PREFIX="$tmp/prefix" >"$tmp/install.log"
p=$tmp/prefix
libdir=
for d in lib lib64 "lib/$(gcc -print-multiarch 2>/dev/null)"; do
  if [ -f "$p/$d/libdk.a" ]; then libdir=$d; break; fi
done
[ -n "$libdir" ] || { echo "check_install: no libdk.a under $p"; exit 1; }
for f in "$libdir/libdk.a" "$libdir/pkgconfig/dk.pc" "$libdir/cmake/dk/dkConfig.cmake" \
         "$libdir/cmake/dk/dkTargets.cmake" include/dk.h include/dk/common.h bin/dk share/man/man1/dk.1; do
  [ -e "$p/$f" ] || { echo "check_install: $f was not installed"; exit 1; }
done
soname=$(readelf -d "$p/$libdir/libdk.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ -f "$p/$libdir/$soname" ] && [[ $soname == libdk.so.* ]] ||
  { echo "check_install: bad SONAME '$soname'"; exit 1; }
echo "check_install: installed under $p/$libdir (SONAME $soname)"

cat >"$tmp/app.c" <<'C'
/* reads a table through the installed libdk */
#include <stdio.h>
#include "dk.h"
int main(int argc, char **argv) {
  dk_error err;
  dk_error_init(&err);
  dk_table *t = NULL;
  dk_snapshot *s = NULL;
  if (dk_table_open(&t, argv[1], NULL, &err) || dk_snapshot_open(&s, t, NULL, &err)) {
    fprintf(stderr, "app: %s\n", err.message);
    return 1;
  }
  printf("dk %d: version %lld, %lld files\n", dk_version_number(),
         (long long)dk_snapshot_version(s), (long long)dk_snapshot_num_files(s));
  dk_snapshot_free(s);
  dk_table_free(t);
  return argc == 2 ? 0 : 1;
}
C
export PKG_CONFIG_PATH="$p/$libdir/pkgconfig"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror -o "$tmp/app_pc" "$tmp/app.c" $(pkg-config --cflags --libs dk)
LD_LIBRARY_PATH="$p/$libdir" "$tmp/app_pc" "$table"
LD_LIBRARY_PATH="$p/$libdir" ldd "$tmp/app_pc" | grep -q "$soname => $p/" || { echo "check_install: app_pc does not use $soname"; exit 1; }
# static: the archive and its private dependencies from dk.pc
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror -o "$tmp/app_pc_static" "$tmp/app.c" $(pkg-config --cflags dk) \
  "$p/$libdir/libdk.a" $(pkg-config --static --libs dk | sed 's/ -ldk / /')
"$tmp/app_pc_static" "$table"

mkdir -p "$tmp/cm"
cp "$tmp/app.c" "$tmp/cm/app.c"
cat >"$tmp/cm/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.20)
project(app C)
find_package(dk 0.1 REQUIRED)
add_executable(app_shared app.c)
target_link_libraries(app_shared PRIVATE dk::dk)
add_executable(app_static app.c)
target_link_libraries(app_static PRIVATE dk::dk_static)
CM
cmake -S "$tmp/cm" -B "$tmp/cm/build" -G Ninja -DCMAKE_PREFIX_PATH="$p" >/dev/null
ninja -C "$tmp/cm/build" >/dev/null
"$tmp/cm/build/app_shared" "$table"
"$tmp/cm/build/app_static" "$table"
echo "check_install: pkg-config (shared, static) and find_package(dk) (dk::dk, dk::dk_static): ok"
