#!/usr/bin/env bash
# The Quick start main job: set up only what it needs (kcm with the spark extra: `ci/setup.sh --main`), then explore
# the default bounded cluster on embedded Spark local[*]. The first run uses the pure source: on 2 cores the compiled
# build takes longer than it saves on one exploration (`KCM_COMPILED=1 bash ci/explore.sh` builds it first, without
# the profile's training run; `bash ci/setup.sh` sets up everything else). Prints the time of each phase.
set -euo pipefail
cd "$(dirname "$0")/.."
now() { date +%s%3N; }
secs() { local ms=$(( $(now) - $1 )); printf '%d.%d' $((ms / 1000)) $(((ms % 1000) / 100)); }
began=$(now)
bash ci/setup.sh --main
setup=$(secs "$began")
echo "explore: set-up took ${setup} s; exploring ..." >&2
explored=$(now)
status=0
.venv/bin/kcm explore --config default --engine spark --master 'local[*]' "$@" || status=$?
echo "explore: exploration $(secs "$explored") s; from the start to the summary $(secs "$began") s" \
     "(set-up ${setup} s)" >&2
exit "$status"
