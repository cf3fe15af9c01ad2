#!/usr/bin/env bash
# The local native stack: RabbitMQ, PostgreSQL with FerretDB on it, MinIO, the nginx
# gateway and Prometheus, as plain background processes (no systemd, no Docker), data
# and logs under $VAR_DIR.
#
#   stack.sh up                 install what is missing, start what is not running, wait
#   stack.sh down               stop everything (graceful)
#   stack.sh status             one line per component
#   stack.sh start|stop NAME    one component (start waits until it answers)
#   stack.sh kill NAME          SIGKILL the component's server process (fault injection)
#   stack.sh pid NAME           print its server pid; exit 1 when not running
#   stack.sh logs [NAME]        the last lines of each (or one) component's logs
#   stack.sh rabbitmqctl ARGS   rabbitmqctl (or rabbitmq-diagnostics ...) against our node
#
# NAME is one of: rabbitmq postgres ferretdb minio gateway prometheus.
# Each component file defines the functions NAME_launch, NAME_ready, NAME_configure,
# NAME_stop and the settings NAME_PORT, NAME_TIMEOUT, NAME_PIDFILE, NAME_PATTERN.
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/env.sh"
. "$HERE/lib.sh"
. "$HERE/install.sh"
# Start order; `down` goes the other way.
COMPONENTS=(rabbitmq postgres ferretdb minio gateway prometheus)
for c in "${COMPONENTS[@]}"; do
  # shellcheck source=/dev/null
  . "$HERE/$c.sh"
done

usage() {
  sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

check_name() {
  local c
  for c in "${COMPONENTS[@]}"; do [[ $1 == "$c" ]] && return 0; done
  log "unknown component '$1' (one of: ${COMPONENTS[*]})"
  exit 2
}

# Launch NAME unless it already runs; does not wait. A port held by some other
# program would make a readiness check lie, so that is an error, not a skip.
launch() {
  local c=$1 port
  if component_pid "$c" >/dev/null; then return 0; fi
  port=$(setting "$c" PORT)
  if port_open "$port"; then
    adopt "$c" "$port" && return 0
    log "$c: port $port is in use by a process that is not ours; stop it first"
    return 1
  fi
  log "$c: starting"
  "${c}_launch"
}

# Wait until NAME answers, then apply its configuration (users, bucket, reloads).
await() {
  local c=$1
  if ! wait_for "$c" "$(setting "$c" TIMEOUT)" "${c}_ready"; then
    log "$c: not ready; last lines of its log:"
    tail_log "$c" >&2
    log "$c: its processes:"
    ps -eo pid,pgid,stat,etime,time,args | grep -F -e "$(setting "$c" PORT)" -e "${c}" \
      | grep -v grep >&2 || true
    return 1
  fi
  "${c}_configure"
}

tail_log() {
  case $1 in
    rabbitmq) tail -n 20 "$RMQ_DIR/log/startup.log" "$RMQ_DIR/log/$RABBITMQ_NODE.log" 2>/dev/null ;;
    postgres) tail -n 20 "$PG_DIR/postgres.log" ;;
    ferretdb) tail -n 20 "$FDB_DIR/ferretdb.log" ;;
    minio) tail -n 20 "$MINIO_DIR/minio.log" ;;
    gateway) tail -n 20 "$GW_DIR/logs/error.log" "$GW_DIR/logs/nginx.out" 2>/dev/null ;;
    prometheus) tail -n 20 "$PROM_DIR/prometheus.log" ;;
  esac
}

# `up`: launch everything first and wait afterwards, so the slow starters (RabbitMQ)
# boot in parallel with the others.
cmd_up() {
  install_missing
  local c failed=0 refused=()
  for c in "${COMPONENTS[@]}"; do launch "$c" || refused+=("$c"); done
  # A component that could not launch (its port held by another program, say) will not
  # come up by waiting: say so now, not after every component's readiness timeout
  # (what was launched stops with `make down`).
  if ((${#refused[@]})); then
    log "stack: could not launch ${refused[*]} (why: above); not waiting for the rest"
    return 1
  fi
  for c in "${COMPONENTS[@]}"; do await "$c" || failed=1; done
  ((failed == 0)) || { log "stack: some components failed to start"; return 1; }
  log "stack: up ($SECONDS s)"
}

cmd_down() {
  local c i
  # Reverse order: the gateway and Prometheus first, the stores last.
  for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do
    c=${COMPONENTS[i]}
    if component_pid "$c" >/dev/null; then
      log "$c: stopping"
      "${c}_stop"
    fi
  done
  rabbitmq_after_down
}

cmd_status() {
  local c pid
  for c in "${COMPONENTS[@]}"; do
    if pid=$(component_pid "$c"); then
      printf '%-11s %-8s pid=%-8s port=%s\n' "$c" running "$pid" "$(setting "$c" PORT)"
    else
      printf '%-11s %-8s pid=%-8s port=%s\n' "$c" stopped - "$(setting "$c" PORT)"
    fi
  done
}

cmd_start() {
  install_missing
  launch "$1" && await "$1"
}

cmd_stop() {
  "${1}_stop"
}

# SIGKILL, no grace: the server process and whatever shares its process group. Waits
# until it is gone, so that a `start` right after finds the ports free.
cmd_kill() {
  local pid
  pid=$(component_pid "$1") || { log "$1: not running"; return 0; }
  log "$1: SIGKILL pid $pid"
  kill_group "$pid"
}

cmd_pid() {
  component_pid "$1"
}

# Serialize the commands that change things (two `make` runs, a test calling kill/start
# while another calls up): they would otherwise race on pid files and ports.
case ${1:-} in
  up | down | start | stop | kill)
    mkdir -p "$VAR_DIR"
    exec 9>"$VAR_DIR/stack.lock"
    flock 9
    ;;
esac

case ${1:-} in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  start | stop | kill | pid)
    [[ $# -eq 2 ]] || usage
    check_name "$2"
    "cmd_$1" "$2"
    ;;
  logs)
    if [[ $# -ge 2 ]]; then check_name "$2"; fi
    for c in ${2:-${COMPONENTS[*]}}; do
      echo "### $c"
      tail_log "$c" || true
    done
    ;;
  rabbitmqctl | rabbitmq-diagnostics | rabbitmq-plugins | rabbitmq-queues)
    rabbitmq_cli "$@"
    ;;
  *) usage ;;
esac
