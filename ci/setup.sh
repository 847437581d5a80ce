#!/usr/bin/env bash
# Set up kcm on a fresh machine, in a virtual environment in .venv (editable install). Safe to run again: it only
# adds what is missing. Each phase prints a line when it starts and one with its seconds when it ends (stderr).
#
#   bash ci/setup.sh          everything ci/test.sh needs: kcm with every extra and the dev tools, the compiled
#                             build (profile-guided), Graphviz's `dot` for `kcm table --format svg` and Chromium,
#                             which renders the HTML reports in the tests
#   bash ci/setup.sh --main   only what the Quick start's main job (ci/explore.sh) needs: kcm with the spark extra;
#                             no compiled build unless KCM_COMPILED=1 (then a plain one, without the profile's
#                             training run), no system packages
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# One set-up at a time in a checkout: two at once (the Quick start's two commands started side by side) made the
# venv twice over, and the second one's pip ran in the first one's half-made venv ("No module named pip"). The
# second waits, then finds what the first installed. flock(1) is util-linux's; without it, no waiting.
if command -v flock >/dev/null 2>&1; then
  mkdir -p build
  exec 9>build/.setup.lock
  if ! flock -n 9; then
    echo "setup: another set-up is running in this checkout; waiting for it to end ..." >&2
    flock 9
  fi
fi
mode=all
case "${1:-}" in
  --main) mode=main ;;
  "") ;;
  *) echo "setup: unknown option '$1' (--main, or nothing for everything)" >&2; exit 2 ;;
esac

now() { date +%s%3N; }
# pip's output (the build backend's warnings among it) goes to a log, shown only when pip fails.
pip() {
  local log=.venv/pip.log
  if ! .venv/bin/python -m pip "$@" >"$log" 2>&1; then
    cat "$log" >&2
    return 1
  fi
}
began=$(now)
declare -a split=()
phase_start() { phase=$1; phase_began=$(now); echo "setup: $phase ..." >&2; }
phase_end() {  # $1: what the phase did, when worth saying
  local ms=$(( $(now) - phase_began ))
  local secs; secs=$(printf '%d.%d' $((ms / 1000)) $(((ms % 1000) / 100)))
  echo "setup: $phase: ${secs} s${1:+ ($1)}" >&2
  split+=("$phase ${secs} s")
}

# The compiled build (kcm/compiled.py): the same sources compiled by Cython, used while unchanged. Built by default
# in the full set-up where a C compiler and Python's headers are there (the pure source is used otherwise, and
# always with KCM_PURE=1); KCM_COMPILED=1 insists (a failure stops the set-up), KCM_COMPILED=0 skips it. The main
# job's set-up skips it unless KCM_COMPILED=1: on 2 cores the build takes longer than it saves on one exploration.
compiled=${KCM_COMPILED:-auto}
[ "$mode" = main ] && [ "$compiled" = auto ] && compiled=0
[ "${KCM_PURE:-0}" = 1 ] && compiled=0
if [ "$compiled" = auto ] && { ! command -v "${CC:-cc}" >/dev/null 2>&1 || ! "$PY" -c \
     "import os, sys, sysconfig; sys.exit(not os.path.isfile(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))"; }; then
  compiled=0
fi

if [ "$mode" = main ]; then
  extras=spark
  needs="import kcm, kcm.model, pyspark, numpy, msgpack, pyarrow, pandas"
  marker=.venv/.kcm-installed-main
else
  extras=all,dev
  needs="import kcm, kcm.model, pyspark, z3, numpy, msgpack, pyarrow, pandas, hypothesis, icontract, xxhash, junitparser, kazoo"
  marker=.venv/.kcm-installed
fi
[ "$compiled" != 0 ] && { extras=$extras,compiled; needs="$needs, Cython"; }

phase_start "venv and pip (kcm[$extras])"
did="already there"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
  pip install --quiet --upgrade pip
  did="new venv"
fi
# Up to date: every module imports, and pyproject.toml is not newer than this set-up's (or the full one's) install.
if ! .venv/bin/python -c "$needs" 2>/dev/null \
   || { [ pyproject.toml -nt "$marker" ] && [ pyproject.toml -nt .venv/.kcm-installed ]; }; then
  if [ "$compiled" = auto ]; then
    # No Cython to be had is no reason to stop: the pure source is used.
    pip install --quiet -e ".[$extras]" \
      || { compiled=0; extras=${extras%,compiled}; pip install --quiet -e ".[$extras]"; }
  else
    pip install --quiet -e ".[$extras]"
  fi
  touch "$marker"
  did="${did:+$did, }installed"
fi
phase_end "$did"

if [ "$compiled" != 0 ]; then
  build=()
  [ "$mode" = main ] && build=(--no-pgo)  # a plain Cython build: no instrumented build, training run, rebuild
  phase_start "compiled build${build:+ (${build[*]})}"
  if [ "$compiled" = 1 ]; then
    .venv/bin/python ci/build_compiled.py "${build[@]}" >&2
    phase_end
  elif .venv/bin/python ci/build_compiled.py "${build[@]}" >/dev/null 2>&1; then
    phase_end
  else
    phase_end "the compiler failed: the pure source is used"
  fi
fi

if [ "$mode" = all ]; then
  phase_start "system packages"
  missing=()
  command -v dot >/dev/null 2>&1 || missing+=(graphviz)
  command -v chromium >/dev/null 2>&1 || missing+=(chromium)
  if [ ${#missing[@]} -eq 0 ]; then
    phase_end "already there"
  elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    if (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null); then
      phase_end "installed ${missing[*]}"
    else
      phase_end "could not install ${missing[*]}; 'kcm table --format svg' and the browser test will say so"
    fi
  else
    why="missing ${missing[*]} (apt-get install ${missing[*]}): 'kcm table --format svg' needs graphviz,"
    phase_end "$why the HTML report's browser test chromium"
  fi
fi

ms=$(( $(now) - began ))
total=$(printf '%d.%d' $((ms / 1000)) $(((ms % 1000) / 100)))
joined=$(printf '%s; ' "${split[@]}")
echo "setup: done in ${total} s (${joined%; })" >&2
