#!/usr/bin/env bash
# check_layers.sh — the modules of src/ depend one way: a file of src/<lower>/ never includes
# a header of src/<upper>/. Run by `make test-c`; fails listing each offending #include.
#
# Order, lowest first (modules on one line are siblings and may not include each other
# either unless they are the same module):
#   util → io, storage → codec/json → arrow → codec/parquet → protocol → log → snapshot
#   → history → expr → dv → scan → changes, txn
# A module not listed here fails the check until it is given its place, and one listed here
# until docs/modules.md has its row. Public headers (dk/...) may be included from anywhere.
set -euo pipefail
cd "$(dirname "$0")/.."

ranks="
util 0
io 1
storage 1
codec/json 2
arrow 3
codec/parquet 4
protocol 5
log 6
snapshot 7
history 8
expr 9
dv 10
scan 11
changes 12
txn 12
"

# docs/modules.md (the module map) has a row for every module placed here
for m in $(echo "$ranks" | awk 'NF == 2 {print $1}'); do
  grep -q "^| \`$m\` |" docs/modules.md ||
    { echo "check_layers: docs/modules.md has no row for module '$m'"; exit 1; }
done

find src -name '*.[ch]' | sort | xargs grep -H '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' /dev/null |
awk -v ranks="$ranks" '
  function module_of(p,   n, parts) {
    n = split(p, parts, "/")
    if (n < 2) return ""
    if (parts[1] == "codec" && n >= 3) return parts[1] "/" parts[2]
    return parts[1]
  }
  BEGIN {
    n = split(ranks, l, "\n")
    for (i = 1; i <= n; i++) if (split(l[i], kv, " ") == 2) rank[kv[1]] = kv[2]
    rc = 0
  }
  {
    file = $0; sub(/:.*/, "", file)
    inc = $0; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
    rel = file; sub(/^src\//, "", rel)
    from = module_of(rel)
    if (from == "") next
    if (!(from in rank)) {
      if (!(from in unplaced)) print "check_layers: " file ": module \x27" from "\x27 has no place in tools/check_layers.sh"
      unplaced[from] = 1; rc = 1; next
    }
    if (inc ~ /^dk\// || inc == "dk.h") next
    to = module_of(inc)
    if (to == "" || to == from) next
    if (!(to in rank)) {
      print "check_layers: " file " includes \"" inc "\": module \x27" to "\x27 has no place in the order"; rc = 1
    } else if (rank[to] >= rank[from]) {
      print "check_layers: " file " (" from ") includes \"" inc "\" (" to "), which is not below it"; rc = 1
    }
  }
  END {
    if (rc == 0) print "check_layers: every include in src/ points down"
    exit rc
  }'
