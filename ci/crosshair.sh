#!/usr/bin/env bash
# CrossHair over every icontract-guarded function of the model: the guarded transitions and the table laws.
# Bounded: each postcondition gets at most KCM_CROSSHAIR_TIMEOUT seconds (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
exec "$PY" -m crosshair check --analysis_kind=icontract \
  --per_condition_timeout="${KCM_CROSSHAIR_TIMEOUT:-2}" \
  model/transitions.py checkers/table_contracts.py
