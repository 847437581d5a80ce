#!/usr/bin/env bash
# Set up kcm on a fresh machine: a virtual environment in .venv with kcm and every extra installed (editable),
# Graphviz's `dot` for `kcm table --format svg` and Chromium, which renders the HTML reports in the tests.
# Safe to run again: it only adds what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
fi
if ! .venv/bin/python -c "import kcm, kcm.model, pyspark, z3, numpy, pyarrow, pandas, hypothesis, icontract, xxhash, junitparser, kazoo" 2>/dev/null \
   || [ pyproject.toml -nt .venv/.kcm-installed ]; then
  .venv/bin/python -m pip install --quiet -e '.[all,dev]'
  touch .venv/.kcm-installed
fi
# The compiled build (kcm/compiled.py): the same sources compiled by Cython, used while unchanged. Built by default
# where a C compiler and Python's headers are there (the pure source is used otherwise, and always with
# KCM_PURE=1); KCM_COMPILED=1 insists (a failure stops the set-up), KCM_COMPILED=0 skips it.
compiled=${KCM_COMPILED:-auto}
[ "${KCM_PURE:-0}" = 1 ] && compiled=0
if [ "$compiled" = auto ] && { ! command -v "${CC:-cc}" >/dev/null 2>&1 || ! .venv/bin/python -c \
     "import os, sys, sysconfig; sys.exit(not os.path.isfile(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))"; }; then
  compiled=0
fi
if [ "$compiled" != 0 ]; then
  if [ "$compiled" = 1 ]; then
    .venv/bin/python -c "import Cython" 2>/dev/null || .venv/bin/python -m pip install --quiet -e '.[all,dev,compiled]'
    .venv/bin/python ci/build_compiled.py
  elif ! { .venv/bin/python -c "import Cython" 2>/dev/null \
           || .venv/bin/python -m pip install --quiet -e '.[all,dev,compiled]' >/dev/null 2>&1; } \
       || ! .venv/bin/python ci/build_compiled.py 2>/dev/null; then
    : # no Cython to be had, or the compiler failed: the pure source is used
  fi
fi
missing=()
command -v dot >/dev/null 2>&1 || missing+=(graphviz)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null) \
      || echo "setup: could not install ${missing[*]}; 'kcm table --format svg' and the browser test will say so" >&2
  else
    echo "setup: missing ${missing[*]} (apt-get install ${missing[*]}): 'kcm table --format svg' needs graphviz," \
         "the HTML report's browser test chromium" >&2
  fi
fi
