#!/usr/bin/env bash
# Process helpers shared by stack.sh and services.sh. Sourced after env.sh, never run.
#
# Every component is started detached in its own session (setsid), with stdin from
# /dev/null and stdout/stderr into its log, so that nothing keeps a caller's pipes open
# (pytest's subprocess.run would otherwise wait forever) and so that its whole process
# group can be signalled at once. A pid file names the real server process.

# port_open PORT: true when something accepts TCP connections on 127.0.0.1:PORT.
port_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# http_ok URL: true when URL answers 2xx within 2 seconds.
http_ok() {
  curl -fsS -o /dev/null --max-time 2 "$1"
}

# pid_alive PIDFILE PATTERN: print the pid in PIDFILE when that process exists and its
# command line matches PATTERN (an extended regex). The pattern guards against a stale
# pid file whose number the kernel has since given to an unrelated process.
pid_alive() {
  local pidfile=$1 pattern=$2 pid cmd
  [[ -s $pidfile ]] || return 1
  pid=$(tr -dc '0-9' <"$pidfile")
  [[ -n $pid && -r /proc/$pid/cmdline ]] || return 1
  # A zombie still has a /proc entry, but its cmdline is empty: treat it as gone.
  cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
  [[ $cmd =~ $pattern ]] || return 1
  echo "$pid"
}

# spawn LOGFILE COMMAND...: run COMMAND detached in a new session; print its pid.
# In a non-interactive shell a background child is not a process-group leader, so
# setsid(1) calls setsid(2) and execs in place: $! is the server's own pid.
spawn() {
  local logfile=$1; shift
  mkdir -p "$(dirname "$logfile")"
  printf '\n=== %s: %s\n' "$(date -Is)" "$*" >>"$logfile"
  # 9>&-: stack.sh's lock descriptor must not outlive it in a long-running server.
  setsid "$@" </dev/null >>"$logfile" 2>&1 9>&- &
  echo $!
}

# wait_gone PID SECONDS: wait until PID has exited; false on timeout.
wait_gone() {
  local pid=$1 deadline=$((SECONDS + $2))
  while [[ -e /proc/$pid ]] && [[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) != Z ]]; do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}

# kill_group PID: SIGKILL PID itself, then every process left in its process group
# (nginx workers, RabbitMQ's erl_child_setup, the wrapper shell). Never our own group.
kill_group() {
  local pid=$1 pgid
  pgid=$(ps -o pgid= -p "$pid" 2>/dev/null | tr -d ' ') || true
  kill -KILL "$pid" 2>/dev/null || true
  if [[ -n $pgid && $pgid != "$(ps -o pgid= -p $$ | tr -d ' ')" ]]; then
    kill -KILL -- "-$pgid" 2>/dev/null || true
  fi
  wait_gone "$pid" 10
}

# stop_pid PID SECONDS: SIGTERM (graceful shutdown), then SIGKILL the group on timeout.
stop_pid() {
  local pid=$1 secs=$2
  kill -TERM "$pid" 2>/dev/null || return 0
  if ! wait_gone "$pid" "$secs"; then
    log "pid $pid ignored SIGTERM for ${secs}s; killing it"
    kill_group "$pid"
  fi
}

# setting NAME KEY: the value of the variable ${NAME^^}_KEY (RABBITMQ_PORT, ...).
setting() {
  local var="${1^^}_$2"
  echo "${!var}"
}

# component_pid NAME: the pid of NAME's server process, from ${NAME^^}_PIDFILE, checked
# against ${NAME^^}_PATTERN; exit 1 when it is not running.
component_pid() {
  pid_alive "$(setting "$1" PIDFILE)" "$(setting "$1" PATTERN)"
}

# port_owner PORT: the pid listening on 127.0.0.1:PORT, when ss(8) can tell.
port_owner() {
  command -v ss >/dev/null || return 1
  ss -ltnpH "sport = :$1" 2>/dev/null | grep -o 'pid=[0-9]*' | head -n 1 | cut -d= -f2 | grep .
}

# adopt NAME PORT: when the process on PORT is NAME's own server (same binary, same data
# directory) but its pid file is gone, record it again instead of failing on the port.
adopt() {
  local c=$1 pid pidfile
  pid=$(port_owner "$2") || return 1
  pidfile=$(setting "$c" PIDFILE)
  echo "$pid" >"$pidfile"
  if component_pid "$c" >/dev/null; then
    log "$c: adopting the running server, pid $pid"
    return 0
  fi
  rm -f "$pidfile"
  return 1
}

# public_tls: true when the public listeners are off (PEERTRAIN_PUBLIC_ADDRESS unset),
# or when their certificate and key are readable files; else says what is missing.
# Peers on other machines get TLS or nothing: their broker password and tokens would
# otherwise cross the network in the clear.
public_tls() {
  [[ -z $PEERTRAIN_PUBLIC_ADDRESS ]] && return 0
  local f
  for f in PEERTRAIN_TLS_CERT PEERTRAIN_TLS_KEY; do
    if [[ -z ${!f:-} || ! -r ${!f} ]]; then
      log "PEERTRAIN_PUBLIC_ADDRESS=$PEERTRAIN_PUBLIC_ADDRESS needs $f (a readable PEM file)"
      return 1
    fi
  done
}
