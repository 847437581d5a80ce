#!/usr/bin/env bash
# CrossHair over every icontract-guarded function of the model: the guarded transitions and the table laws.
# Bounded by iterations, not seconds (KCM_CROSSHAIR_ITERATIONS without progress per condition, default 50): the
# search is seeded, so the same bound explores the same inputs on every run, on a busy machine or an idle one.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
export KCM_PURE=1  # CrossHair executes the Python source symbolically, never the compiled build
exec "$PY" -m crosshair check --analysis_kind=icontract \
  --max_uninteresting_iterations="${KCM_CROSSHAIR_ITERATIONS:-50}" --per_path_timeout=60 \
  model/transitions.py checkers/gate/table_contracts.py
