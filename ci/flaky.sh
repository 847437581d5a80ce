#!/usr/bin/env bash
# Flakiness check: run the chosen tests N times in a row under `pytest -n 2` and count the runs that failed.
# Usage: bash ci/flaky.sh N [pytest args...]   (default: the slow-marked tests, `-m slow`)
# Exit 0 only if every run passed; each failed run's summary is kept in out/flaky/run-K.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
shift || true
case "$runs" in ''|*[!0-9]*) echo "ci/flaky.sh: N must be a whole number, got '$runs'" >&2; exit 2 ;; esac
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(-m slow)
mkdir -p out/flaky
failed=0
for k in $(seq 1 "$runs"); do
  if .venv/bin/python -m pytest -q -n 2 -p no:cacheprovider "${args[@]}" > "out/flaky/run-$k.txt" 2>&1; then
    echo "run $k/$runs: $(tail -n 1 "out/flaky/run-$k.txt")"
  else
    failed=$((failed + 1))
    echo "run $k/$runs FAILED: $(tail -n 1 "out/flaky/run-$k.txt")"
  fi
done
echo "flaky check: $((runs - failed)) of $runs runs passed (pytest ${args[*]})"
[ "$failed" -eq 0 ]
