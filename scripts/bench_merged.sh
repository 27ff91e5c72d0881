#!/usr/bin/env bash
# bench_merged.sh — measure dk as it would be after merging other branches, without
# committing any merge: creates a throwaway git worktree (branch bench-scratch-<pid>) from
# HEAD, merges the given branches into it, builds a release dk there, runs bench/run.py of
# THIS checkout against that build (inputs cached in this checkout's bench/cache/), then
# removes the worktree and its branch.
#
# usage: scripts/bench_merged.sh BRANCH[,BRANCH...] [bench/run.py args...]
#   e.g. scripts/bench_merged.sh parquet parquet_decode
#        scripts/bench_merged.sh log snapshot_load --sizes 10k,100k
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
[ $# -ge 1 ] || { sed -n '2,11p' "$0"; exit 2; }
IFS=, read -r -a branches <<<"$1"
shift
scratch=$(mktemp -d /tmp/dk-bench-scratch.XXXXXX)
branch="bench-scratch-$$"
cleanup() {
  git -C "$repo" worktree remove --force "$scratch" >/dev/null 2>&1 || true
  git -C "$repo" branch -D "$branch" >/dev/null 2>&1 || true
  rm -rf "$scratch"
}
trap cleanup EXIT
git worktree add -q -b "$branch" "$scratch" HEAD
for b in "${branches[@]}"; do
  echo "bench_merged: merging $b"
  git -C "$scratch" -c user.name=bench -c user.email=bench@localhost \
    merge -q --no-edit "$b"
done
cmake -S "$scratch" -B "$scratch/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C "$scratch/build" dk_cli $(cd bench && ls *.c 2>/dev/null | sed 's/\.c$//;s/^/bench_/')
PY=${PYTHON:-.venv/bin/python}
"$PY" bench/run.py --build "$scratch/build" "$@"
