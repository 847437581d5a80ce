#!/usr/bin/env bash
# A standalone ZooKeeper for kcm's live mode and its tests, bound to 127.0.0.1 on a free port.
#
#   bash ci/zookeeper.sh start   # prints HOST:PORT (installs Debian's zookeeper package first when missing)
#   bash ci/zookeeper.sh stop    # stops exactly the server `start` started and removes its data directory
#   bash ci/zookeeper.sh status  # prints HOST:PORT and exits 0 when that server answers ruok, else exits 1
#
# State (pid file, address, configuration, data directory, server log) lives in $KCM_ZOOKEEPER_STATE, by default
# .venv/zookeeper in this checkout, so two checkouts on one machine each run their own server.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
STATE="${KCM_ZOOKEEPER_STATE:-$ROOT/.venv/zookeeper}"
JAR=/usr/share/java/zookeeper.jar
PY=$(command -v python3 || command -v python)

ruok() {  # ruok HOST PORT: succeeds when the server answers imok
  "$PY" - "$1" "$2" <<'EOF'
import socket, sys
try:
    with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=1) as s:
        s.sendall(b"ruok")
        sys.exit(0 if s.recv(16) == b"imok" else 1)
except OSError:
    sys.exit(1)
EOF
}

running() {  # the server this state directory records is alive and answers
  [ -f "$STATE/pid" ] && [ -f "$STATE/address" ] || return 1
  kill -0 "$(cat "$STATE/pid")" 2>/dev/null || return 1
  local addr; addr=$(cat "$STATE/address")
  ruok "${addr%:*}" "${addr##*:}"
}

install_zookeeper() {
  [ -f "$JAR" ] && return 0
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "zookeeper.sh: $JAR is missing; install Debian's zookeeper package (apt-get install zookeeper)" >&2
    exit 1
  fi
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq zookeeper >/dev/null
}

start() {
  if running; then
    cat "$STATE/address"
    return 0
  fi
  stop_quietly
  install_zookeeper
  command -v java >/dev/null 2>&1 || { echo "zookeeper.sh: java is missing (ZooKeeper needs Java 11+)" >&2; exit 1; }
  mkdir -p "$STATE"
  local data port
  data=$(mktemp -d "${TMPDIR:-/tmp}/kcm-zookeeper.XXXXXX")
  port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
  echo "$data" > "$STATE/datadir"
  cat > "$STATE/zoo.cfg" <<EOF
tickTime=500
minSessionTimeout=1000
maxSessionTimeout=30000
dataDir=$data
clientPort=$port
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr
EOF
  # setsid: the server outlives this shell but not its own process group; its pid is the one `stop` kills.
  setsid java -Xmx256m -Dzookeeper.log.dir="$STATE" -Dzookeeper.root.logger=WARN,CONSOLE \
    -cp "$JAR:/etc/zookeeper/conf" org.apache.zookeeper.server.quorum.QuorumPeerMain "$STATE/zoo.cfg" \
    > "$STATE/server.log" 2>&1 < /dev/null &
  echo $! > "$STATE/pid"
  echo "127.0.0.1:$port" > "$STATE/address"
  for _ in $(seq 1 120); do
    if ruok 127.0.0.1 "$port"; then
      cat "$STATE/address"
      return 0
    fi
    if ! kill -0 "$(cat "$STATE/pid")" 2>/dev/null; then
      break
    fi
    sleep 0.25
  done
  echo "zookeeper.sh: the server did not answer ruok on 127.0.0.1:$port; its log:" >&2
  tail -n 20 "$STATE/server.log" >&2 || true
  stop_quietly
  exit 1
}

stop_quietly() {
  if [ -f "$STATE/pid" ]; then
    local pid; pid=$(cat "$STATE/pid")
    # Only the process this script started: a java whose command line names this state directory's config.
    if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF "$STATE/zoo.cfg"; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 40); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.25
      done
      kill -9 "$pid" 2>/dev/null || true
    fi
  fi
  if [ -f "$STATE/datadir" ]; then
    rm -rf -- "$(cat "$STATE/datadir")"
  fi
  rm -f "$STATE/pid" "$STATE/address" "$STATE/datadir" "$STATE/zoo.cfg"
}

case "${1:-}" in
  start) start ;;
  stop) stop_quietly ;;
  status) running && cat "$STATE/address" ;;
  *) echo "usage: bash ci/zookeeper.sh start|stop|status" >&2; exit 2 ;;
esac
