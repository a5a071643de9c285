#!/usr/bin/env bash
# `make flake-check`: run `make test` RUNS times in a row with `make bench-ingest`
# looping beside it as load, and print one line per run (exit code, seconds, summary).
# Bounded: RUNS runs, then the load stops. Logs go to reports/flake/.
set -uo pipefail
cd "$(dirname "$0")/../.."
runs=${RUNS:-5}
out=reports/flake
mkdir -p "$out"
rm -f "$out/stop" "$out/summary.txt"
( while [ ! -f "$out/stop" ]; do
    .venv/bin/python -m tests.benchmarks.ingest > "$out/load.log" 2>&1
    sleep 60
  done ) &
load=$!
failed=0
for i in $(seq 1 "$runs"); do
  start=$(date +%s)
  make test > "$out/run$i.log" 2>&1
  rc=$?
  [ "$rc" -eq 0 ] || failed=$((failed + 1))
  line="run $i rc=$rc seconds=$(( $(date +%s) - start )) $(grep -E '(passed|failed)' "$out/run$i.log" | tail -1)"
  echo "$line" | tee -a "$out/summary.txt"
done
touch "$out/stop"
wait "$load"
echo "RESULT runs=$runs failed_runs=$failed"
[ "$failed" -eq 0 ]
