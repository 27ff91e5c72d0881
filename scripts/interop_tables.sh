#!/usr/bin/env bash
# interop_tables.sh [OUTDIR] — the interop tables and their Spark oracle (tests/interop/build.py)
# in OUTDIR (default $DK_INTEROP_DIR, else build/interop), built once and shared by
# `make test-spark` (tests/spark) and `make test-interop` (tests/interop).
# Cached by content: OUTDIR/FINGERPRINT holds a hash of everything that decides the tables (the
# generator, oracle dumper, Spark settings and the pinned Spark/Delta versions). When it differs,
# the tables this script built are deleted and rebuilt; when it matches, build.py only fills in
# what is missing (it skips tables with DONE and oracle.json), so an interrupted build resumes.
# Needs scripts/install_spark.sh to have run.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-${DK_INTEROP_DIR:-build/interop}}
inputs=(tests/interop/gen_tables.py tests/interop/dump_oracle.py tests/interop/sparkenv.py
        tests/interop/build.py tests/interop/requirements.txt)
fp=$(cat "${inputs[@]}" | sha256sum | cut -c1-32)
if [ -f "$out/FINGERPRINT" ] && [ "$(cat "$out/FINGERPRINT")" != "$fp" ]; then
  echo "interop_tables: generator inputs changed, rebuilding $out"
  rm -rf "$out"
fi
mkdir -p "$out"
echo "$fp" > "$out/FINGERPRINT"
.venv/bin/python tests/interop/build.py "$out"
