#!/usr/bin/env bash
# check_symbols.sh LIBDK_SO — the dynamic symbols libdk.so exports must be exactly the
# functions include/dk/ declares with DK_API (nothing internal leaks, nothing declared is
# missing), and no global symbol of the static archive may have a public-shaped name that
# is not API (internals are dk__x or dk_<module>__x; see docs/ and c-style.md).
set -euo pipefail
cd "$(dirname "$0")/.."
so=${1:-build/libdk.so}
ar=${2:-$(dirname "$so")/libdk.a}
declared=$(cat include/dk.h include/dk/*.h include/dk/sys/*.h | grep -v "^[[:space:]]*#" |
  tr '\n' ' ' | grep -oE 'DK_API[^;{]*\(' | grep -oE '[A-Za-z_][A-Za-z0-9_]*[[:space:]]*\($' |
  tr -d '( ' | sort -u)
exported=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDRBW]$/ {print $3}' | sort -u)
rc=0
if ! diff <(echo "$declared") <(echo "$exported") >/tmp/dk_symdiff.$$; then
  echo "check_symbols: libdk.so exports differ from the DK_API declarations (< declared only, > exported only):"
  grep '^[<>]' /tmp/dk_symdiff.$$; rc=1
fi
rm -f /tmp/dk_symdiff.$$
if [ -f "$ar" ]; then
  bad=$(nm -g --defined-only "$ar" 2>/dev/null | awk '$2 ~ /^[TDRB]$/ {print $3}' | sort -u |
        grep -E '^dk_' | grep -v '__' | comm -23 - <(echo "$declared") || true)
  if [ -n "$bad" ]; then
    echo "check_symbols: internal global symbols with public-shaped names (rename to dk__x / dk_<module>__x):"
    echo "$bad"; rc=1
  fi
fi
[ $rc = 0 ] && echo "check_symbols: $(echo "$exported" | wc -l) exported symbols match DK_API"
exit $rc
