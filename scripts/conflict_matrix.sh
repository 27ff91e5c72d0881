#!/usr/bin/env bash
# conflict_matrix.sh — delta-spark's decisions for the concurrent-transaction pairs of
# tests/interop/conflict_cases.py, cached in tests/interop/conflict_matrix.json (committed: the
# dk side, tests/python/test_txn_conflict_matrix.py, needs no Spark). Regenerated only when the
# runner, the cases or the pinned Spark/Delta versions change (the JSON's fingerprint).
# Needs scripts/install_spark.sh. About 30-60 minutes on this 2-core machine (one SparkSession).
set -euo pipefail
cd "$(dirname "$0")/.."
out=tests/interop/conflict_matrix.json
fp=$(.venv/bin/python -c 'import sys; sys.path.insert(0, "tests/interop"); import conflict_matrix_spark as m; print(m.fingerprint())')
if [ -f "$out" ] && grep -q "\"fingerprint\": \"$fp\"" "$out" && [ "${1:-}" != "--force" ]; then
  echo "conflict_matrix: $out is current"; exit 0
fi
.venv/bin/python tests/interop/conflict_matrix_spark.py "$out"
