#!/usr/bin/env bash
# The Quick start main job: set up kcm, then explore the default bounded cluster on embedded Spark local[*].
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/setup.sh
exec .venv/bin/kcm explore --config default --engine spark --master 'local[*]' "$@"
