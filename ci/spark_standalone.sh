#!/usr/bin/env bash
# A Spark standalone master and one worker (1 core) on 127.0.0.1, from the pyspark package in .venv.
#   bash ci/spark_standalone.sh start   # prints the master URL (spark://127.0.0.1:PORT)
#   bash ci/spark_standalone.sh stop    # stops exactly the two processes `start` started
#   bash ci/spark_standalone.sh url     # the running master's URL
# PORT is $KCM_SPARK_PORT, else a free port. The process ids, logs and the URL live in $KCM_SPARK_STATE
# (default .spark-standalone/ in the repository); `stop` kills only the ids written there.
set -euo pipefail
cd "$(dirname "$0")/.."
STATE=${KCM_SPARK_STATE:-$PWD/.spark-standalone}
PY=${PYTHON:-$PWD/.venv/bin/python}
SPARK_HOME=$("$PY" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')
export SPARK_HOME
# The daemons' JVMs: their own work and log folders, and Spark's own log configuration quieted.
export SPARK_LOG_DIR=$STATE SPARK_WORKER_DIR=$STATE/work SPARK_LOCAL_DIRS=$STATE/local
export SPARK_NO_DAEMONIZE=1

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

start() {
  if alive "$STATE/master.pid" || alive "$STATE/worker.pid"; then
    echo "spark_standalone: already running ($(cat "$STATE/url")); stop it first" >&2
    exit 1
  fi
  mkdir -p "$STATE/work" "$STATE/local"
  local port=${KCM_SPARK_PORT:-$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
  local url="spark://127.0.0.1:$port"
  "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master --host 127.0.0.1 --port "$port" \
    --webui-port 0 >"$STATE/master.log" 2>&1 &
  echo $! >"$STATE/master.pid"
  for _ in $(seq 1 120); do
    if "$PY" -c "import socket, sys; socket.create_connection(('127.0.0.1', $port), 1).close()" 2>/dev/null; then
      break
    fi
    alive "$STATE/master.pid" || { echo "spark_standalone: the master did not start:" >&2; tail -5 "$STATE/master.log" >&2; exit 1; }
    sleep 0.5
  done
  "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker --host 127.0.0.1 --cores 1 --memory 2g \
    --webui-port 0 --work-dir "$STATE/work" "$url" >"$STATE/worker.log" 2>&1 &
  echo $! >"$STATE/worker.pid"
  for _ in $(seq 1 120); do
    grep -q "Successfully registered with master" "$STATE/worker.log" 2>/dev/null && break
    alive "$STATE/worker.pid" || { echo "spark_standalone: the worker did not start:" >&2; tail -5 "$STATE/worker.log" >&2; stop; exit 1; }
    sleep 0.5
  done
  echo "$url" >"$STATE/url"
  echo "$url"
}

stop() {
  for role in worker master; do
    local f="$STATE/$role.pid"
    if alive "$f"; then
      local pid; pid=$(cat "$f")
      kill "$pid"
      for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
      kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
    fi
    rm -f "$f"
  done
  rm -f "$STATE/url"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  url) cat "$STATE/url" ;;
  *) echo "usage: $0 start|stop|url" >&2; exit 2 ;;
esac
