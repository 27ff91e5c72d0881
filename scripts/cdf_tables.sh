#!/usr/bin/env bash
# cdf_tables.sh [OUTDIR] — the change-data-feed / streaming-source interop tables and Spark's
# answers (tests/interop/cdf_oracle.py) in OUTDIR (default $DK_CDF_INTEROP_DIR, else
# build/interop_cdf), built once in one SparkSession and reused (issue #19's oracle).
# Cached by content like scripts/interop_tables.sh: OUTDIR/FINGERPRINT is a hash of the
# generator, its helpers, the pinned Spark/Delta versions and DK_CDF_ALL_RANGES (every range
# [a, b] instead of the sampled set); a change rebuilds, an interrupted build resumes.
# Needs scripts/install_spark.sh to have run.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-${DK_CDF_INTEROP_DIR:-build/interop_cdf}}
inputs=(tests/interop/cdf_oracle.py tests/interop/dump_oracle.py tests/interop/sparkenv.py
        tests/interop/requirements.txt)
fp=$( (cat "${inputs[@]}"; echo "all_ranges=${DK_CDF_ALL_RANGES:-0}") | sha256sum | cut -c1-32)
if [ -f "$out/FINGERPRINT" ] && [ "$(cat "$out/FINGERPRINT")" != "$fp" ]; then
  echo "cdf_tables: generator inputs changed, rebuilding $out"
  rm -rf "$out"
fi
mkdir -p "$out"
echo "$fp" > "$out/FINGERPRINT"
.venv/bin/python tests/interop/cdf_oracle.py "$out"
