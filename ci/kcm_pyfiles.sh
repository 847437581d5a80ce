#!/usr/bin/env bash
# Pack kcm for executors that do not have it: kcm's wheel, saved as a .zip (Spark puts .zip, .egg and .jar files
# of --py-files on the executors' Python path, not .whl files; a pure-Python wheel is a zip that Python imports).
#   bash ci/kcm_pyfiles.sh [DIR]     # prints the path of DIR/kcm_kafka-VERSION.zip (DIR defaults to dist/)
#   spark-submit --py-files "$(bash ci/kcm_pyfiles.sh)" kcm/__main__.py explore --engine spark ...
# The executors still need kcm's dependencies (see docs/spark-scale-out.md for a packed venv instead).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=$(realpath -m "${1:-dist}")
PY=${PYTHON:-$PWD/.venv/bin/python}
mkdir -p "$OUT"
BUILD=$(mktemp -d)
trap 'rm -rf "$BUILD"' EXIT
if ! "$PY" -m pip wheel --quiet --no-deps -w "$BUILD" . >"$BUILD/log" 2>&1; then
  cat "$BUILD/log" >&2
  exit 1
fi
WHEEL=$(ls "$BUILD"/kcm_kafka-*.whl)
NAME=$(basename "$WHEEL" .whl)
cp "$WHEEL" "$OUT/${NAME%%-py3*}.zip"
echo "$OUT/${NAME%%-py3*}.zip"
