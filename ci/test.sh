#!/usr/bin/env bash
# The whole test suite: set-up, lint, then pytest on both cores. Non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
.venv/bin/ruff check .
.venv/bin/python -m pytest -q -n 2 -p no:cacheprovider "$@"
# Which table edges, operations and selectors the shipped scenarios and the tiny exploration exercise.
.venv/bin/kcm coverage
.venv/bin/kcm coverage --config tiny
