#!/usr/bin/env bash
# Every PeerTrain service built so far, as background processes from the workspace venv.
#
#   services.sh up       start the services that are not running; wait for /healthz
#   services.sh down     stop them (SIGTERM, then SIGKILL after a grace period)
#   services.sh status   one line per service
#   services.sh logs     the last lines of each service's log
#
# A service counts as built when services/<name>/src/peertrain/<name>/__main__.py exists.
# Each runs as `python -m peertrain.<name>` with PEERTRAIN_<NAME>_PORT set, its log in
# $VAR_DIR/services/<name>.log and its pid in $VAR_DIR/services/<name>.pid.
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/env.sh"
. "$HERE/lib.sh"

SERVICES=(auth registry dataset orchestrator aggregator)
declare -A PORT=([auth]=$(port 8001) [registry]=$(port 8002) [dataset]=$(port 8003)
  [orchestrator]=$(port 8004) [aggregator]=$(port 8005))
SVC_DIR="$VAR_DIR/services"
HEALTH_TIMEOUT=60

built() {
  [[ -f "$ROOT/services/$1/src/peertrain/$1/__main__.py" ]]
}

svc_pid() {
  pid_alive "$SVC_DIR/$1.pid" "python.* -m peertrain\\.$1( |$)"
}

svc_healthy() {
  svc_pid "$1" >/dev/null && http_ok "http://127.0.0.1:${PORT[$1]}/healthz"
}

# Detached like the stack components (lib.sh's spawn). The port is set explicitly so
# that a stray value in the caller's environment cannot move a service.
svc_launch() {
  local name=$1
  (
    cd "$ROOT" || exit 1
    export "PEERTRAIN_${name^^}_PORT=${PORT[$name]}" "PEERTRAIN_${name^^}_HOST=127.0.0.1"
    spawn "$SVC_DIR/$name.log" python -m "peertrain.$name" >"$SVC_DIR/$name.pid"
  )
}

cmd_up() {
  local name failed=0 started=()
  for name in "${SERVICES[@]}"; do
    built "$name" || continue
    if svc_pid "$name" >/dev/null; then started+=("$name"); continue; fi
    if port_open "${PORT[$name]}"; then
      log "$name: port ${PORT[$name]} is in use by a process that is not ours; stop it first"
      failed=1
      continue
    fi
    log "$name: starting on 127.0.0.1:${PORT[$name]}"
    mkdir -p "$SVC_DIR"
    svc_launch "$name"
    started+=("$name")
  done
  # Launch all first, then wait: the services import their dependencies in parallel.
  for name in "${started[@]}"; do
    if ! wait_for "$name" "$HEALTH_TIMEOUT" svc_healthy "$name"; then
      log "$name: /healthz did not answer; last lines of $SVC_DIR/$name.log:"
      tail -n 30 "$SVC_DIR/$name.log" >&2
      failed=1
    fi
  done
  ((${#started[@]})) || log "services: none built yet (no services/*/src/peertrain/*/__main__.py)"
  ((failed == 0))
}

cmd_down() {
  local name pid
  for name in "${SERVICES[@]}"; do
    if pid=$(svc_pid "$name"); then
      log "$name: stopping"
      stop_pid "$pid" 20
    fi
    rm -f "$SVC_DIR/$name.pid"
  done
}

cmd_status() {
  local name pid state
  for name in "${SERVICES[@]}"; do
    if pid=$(svc_pid "$name"); then
      state=running
      svc_healthy "$name" || state=unhealthy
    else
      pid=- state=stopped
      built "$name" || state="not-built"
    fi
    printf '%-13s %-10s pid=%-8s port=%s\n' "$name" "$state" "$pid" "${PORT[$name]}"
  done
}

mkdir -p "$VAR_DIR"
case ${1:-} in
  up | down)
    exec 9>"$VAR_DIR/services.lock"
    flock 9
    "cmd_$1"
    ;;
  status) cmd_status ;;
  logs)
    for name in "${SERVICES[@]}"; do
      [[ -f $SVC_DIR/$name.log ]] || continue
      echo "### $name"
      tail -n 40 "$SVC_DIR/$name.log"
    done
    ;;
  *)
    sed -n '2,7p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
