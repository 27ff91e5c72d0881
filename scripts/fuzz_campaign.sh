#!/bin/sh
# fuzz_campaign.sh — the on-demand libFuzzer campaign behind `make fuzz` (README, "Fuzzing").
#
# Usage: scripts/fuzz_campaign.sh BUILD_DIR SECONDS TARGET...
# Each TARGET (split, dv, checkpoint, sql, json, ...: fuzz/<TARGET>_fuzzer.c) runs for SECONDS
# under ASan+UBSan (BUILD_DIR holds the clang build with DK_BUILD_FUZZERS and libdk instrumented
# with -fsanitize=fuzzer-no-link,address,undefined) from the repository root (the split target
# reads test tables by relative root), starting from its committed corpus
# fuzz/corpora/<TARGET>; new inputs go to a scratch directory and are then merged into the
# committed corpus with -merge=1 (only inputs that add coverage are kept: a minimized corpus).
# A crash leaves crash-*/leak-*/timeout-* files in fuzz/artifacts/ and fails the script.
set -eu
build=$1
secs=$2
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mkdir -p fuzz/artifacts
status=0
for t in "$@"; do
  bin="$build/${t}_fuzzer"
  [ -x "$bin" ] || { echo "fuzz: $bin not built" >&2; exit 2; }
  corpus="fuzz/corpora/$t"
  scratch=$(mktemp -d)
  mkdir -p "$corpus"
  echo "fuzz: $t for ${secs}s (corpus $(ls "$corpus" | wc -l) files)"
  if ! ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1 \
      "$bin" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -max_len=65536 \
      -print_final_stats=1 -artifact_prefix="fuzz/artifacts/$t-" "$scratch" "$corpus" \
      > "fuzz/artifacts/$t.log" 2>&1; then
    echo "fuzz: $t FAILED (fuzz/artifacts/$t.log)" >&2
    status=1
  fi
  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "fuzz/artifacts/$t.log" || true
  before=$(ls "$corpus" | wc -l)
  "$bin" -merge=1 -timeout=20 -rss_limit_mb=2048 "$corpus" "$scratch" > /dev/null 2>&1 || true
  echo "fuzz: $t corpus $before -> $(ls "$corpus" | wc -l) files"
  rm -rf "$scratch"
done
exit $status
