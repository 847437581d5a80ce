#!/usr/bin/env bash
# Set up kcm on a fresh machine: a virtual environment in .venv with kcm installed (editable) and
# Graphviz's `dot` for `kcm table --format svg`. Safe to run again: it only adds what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
fi
if ! .venv/bin/python -c "import kcm, kcm.model, pyspark, pyarrow, pandas, z3, hypothesis, icontract, xxhash" 2>/dev/null \
   || [ pyproject.toml -nt .venv/.kcm-installed ]; then
  .venv/bin/python -m pip install --quiet -e '.[dev]'
  touch .venv/.kcm-installed
fi
if ! command -v dot >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz >/dev/null) \
      || echo "setup: could not install graphviz; 'kcm table --format svg' will say so" >&2
  else
    echo "setup: Graphviz's dot is missing (apt-get install graphviz); 'kcm table --format svg' needs it" >&2
  fi
fi
