#!/usr/bin/env bash
# `make test`'s first step: refuse at once when a port its lanes' services need is taken.
#
# The tests start the five services on each lane's own ports (8001-8005, moved by the
# lane's offset: PEERTRAIN_PORT_OFFSET for lane 0, LANE1_OFFSET for lane 1). A platform
# left running by `make up` or `make demo` holds lane 0's, and every test that starts a
# service would then fail on its own, minutes later. This check runs before the venv,
# the console build and the stacks: plain bash, no env.sh, nothing started, well under a
# second. It says who holds each port (the platform, from its pid files in
# $VAR_DIR/services; or another process) and what to stop.
#
#   test-preflight.sh        exit 0 when every port is free; else exit 1 with one line
#                            per taken port and what to run
# Reads LANES, LANE1_OFFSET and PYTEST_ARGS as deploy/local/test.sh does.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"

SERVICES=(auth registry dataset orchestrator aggregator)
declare -A DEFAULT_PORT=([auth]=8001 [registry]=8002 [dataset]=8003 [orchestrator]=8004
  [aggregator]=8005)
LANES=${LANES:-2}
if [[ -n ${PYTEST_ARGS:-} ]]; then LANES=1; fi
offsets=("${PEERTRAIN_PORT_OFFSET:-0}")
if ((LANES == 2)); then offsets+=("${LANE1_OFFSET:-100}"); fi

# The same as lib.sh's (which needs env.sh first).
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
port_owner() {
  command -v ss >/dev/null || return 1
  ss -ltnpH "sport = :$1" 2>/dev/null | grep -o 'pid=[0-9]*' | head -n 1 | cut -d= -f2 | grep .
}
# platform_pid OFFSET NAME: the pid of that stack's running service NAME, from its pid
# file (deploy/local/services.sh), checked against its command line.
platform_pid() {
  local var="${PEERTRAIN_VAR:-$ROOT/.var}" pid cmd
  (($1)) && var="$var-lane$1"
  [[ -s $var/services/$2.pid ]] || return 1
  pid=$(tr -dc '0-9' <"$var/services/$2.pid")
  [[ -n $pid && -r /proc/$pid/cmdline ]] || return 1
  cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
  [[ $cmd =~ python.*\ -m\ peertrain\.$2(\ |$) ]] || return 1
  echo "$pid"
}

taken=0 platform=0
for offset in "${offsets[@]}"; do
  for name in "${SERVICES[@]}"; do
    port=$((DEFAULT_PORT[$name] + offset))
    port_open "$port" || continue
    taken=1
    if pid=$(platform_pid "$offset" "$name"); then
      platform=1
      echo "make test: port $port ($name) is held by the running platform (pid $pid; make up / make demo)" >&2
    elif pid=$(port_owner "$port"); then
      cmd=$(tr '\0\n' '  ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-120)
      echo "make test: port $port ($name) is in use by pid $pid ($cmd), not the platform" >&2
    else
      echo "make test: port $port ($name) is in use by another user's process" >&2
    fi
  done
done
((taken)) || exit 0
if ((platform)); then
  echo "make test: the tests start the services on these ports themselves; stop the platform first:" \
    "bash deploy/local/demo.sh peers-down && make down (after make demo), or make down (after make up)" >&2
else
  echo "make test: the tests start the services on these ports themselves: let that process" \
    "end (another test or benchmark run?), or stop it, first" >&2
fi
exit 1
