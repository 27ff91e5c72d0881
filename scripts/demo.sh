#!/usr/bin/env bash
# demo.sh — README's main job: SQL over a Delta table with the dk CLI (an embedded SQLite with
# dk's connector). `make demo` runs scripts/bootstrap.sh and builds dk first. Until dk writes
# tables, the sample table is written by delta-rs from the project's venv
# (connectors/sqlite/make_sample.py): 12 files (3 regions x 4 appends), then a delete.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
DK="$BUILD/dk"
DEMO=${DK_DEMO_DIR:-$BUILD/demo}
T="$DEMO/sales"
mkdir -p "$DEMO"
.venv/bin/python connectors/sqlite/make_sample.py "$T"

run() { # SQL [extra dk sql options]
  local q=$1; shift
  echo
  echo "\$ dk sql \"$q\" $*"
  "$DK" sql "$q" "$@" 2>&1
}

echo "== the table's history (delta_history) and files (delta_files)"
run "SELECT version, timestamp, json_extract(commit_info, '\$.operation') AS operation
     FROM delta_history('$T') ORDER BY version"
run "SELECT partition_values, num_records, size FROM delta_files('$T') ORDER BY path LIMIT 4"

echo
echo "== partition pruning: only the files of region 'eu' are opened"
run "SELECT region, count(*) AS n, round(sum(price), 2) AS revenue
     FROM delta_scan('$T') WHERE region = 'eu' GROUP BY region" --stats

echo
echo "== statistics skipping: file min/max and Parquet row-group statistics skip the rest"
run "SELECT id, region, day, ts, amount, tags FROM delta_scan('$T') WHERE id BETWEEN 5000 AND 5004" --stats
run "SELECT count(*) AS n FROM delta_scan('$T') WHERE id IN (150, 7000, 11999)" --stats

echo
echo "== LIMIT is pushed into the scan"
run "SELECT id, note, _file_name, _row_index FROM delta_scan('$T') LIMIT 3" --stats

echo
echo "== time travel: version 3 still has the rows that version 4 deleted"
run "SELECT count(*) AS n, min(id) AS first_id FROM delta_scan('$T', 3)" --stats
run "SELECT count(*) AS n, min(id) AS first_id FROM delta_scan('$T')" --stats
