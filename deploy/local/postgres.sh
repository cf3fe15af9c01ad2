#!/usr/bin/env bash
# shellcheck disable=SC2034 # NAME_* settings are read by lib.sh through `setting`
# PostgreSQL component of the local stack: Debian's postgresql-15 binaries, our own
# cluster under $VAR_DIR/postgres on a loopback port, FerretDB's backend. Sourced by
# stack.sh, not run by itself.
#
# PostgreSQL refuses to run as root. As root (CI, these machines) the cluster is owned
# by and run as the `postgres` user that Debian's package creates; as anyone else, as
# that user. Access is local only: the server listens on 127.0.0.1 and a socket in
# its own directory, with trust authentication for loopback (the same trust the other
# development components give: RabbitMQ admin/admin on loopback only).

POSTGRES_PORT=$(port 54320)
# A start after a kill replays the WAL written since the last checkpoint first; on a
# loaded machine, after a large log was written, that took longer than 60 s (a CI run
# at 447f6ca: nothing answered and nothing was logged within 60 s of the spawn).
POSTGRES_TIMEOUT=180
POSTGRES_VERSION=15
PG_BIN="/usr/lib/postgresql/$POSTGRES_VERSION/bin"
PG_DIR="$VAR_DIR/postgres"
PG_DATA="$PG_DIR/data"
PG_RUN="$PG_DIR/run"
# The database FerretDB keeps its MongoDB databases in (one PostgreSQL schema each).
PG_FERRETDB_DB=ferretdb

# spawn's pid is the server's own (setpriv and env exec in place). postmaster.pid holds
# more than the pid, so it is not used here.
POSTGRES_PIDFILE="$PG_DIR/postgres.pid"
POSTGRES_PATTERN="postgres -D $PG_DATA"

# The command prefix that runs a program as the cluster's owner. setpriv execs in
# place, so a spawned server keeps the pid spawn reports.
pg_as_owner() {
  if ((EUID == 0)); then
    echo setpriv --reuid=postgres --regid=postgres --init-groups --reset-env -- env LC_ALL=C.UTF-8
  else
    echo env LC_ALL=C.UTF-8
  fi
}

pg_url() {
  echo "postgres://postgres@127.0.0.1:$POSTGRES_PORT/$PG_FERRETDB_DB"
}

# The postgres user must be able to reach $PG_DIR: every folder above it needs the
# search (x) bit for others. A clone under a 0700 folder would otherwise fail with
# "permission denied" deep inside initdb.
pg_path_reachable() {
  ((EUID == 0)) || return 0
  local dir
  dir=$(dirname "$PG_DIR")
  while [[ $dir != / ]]; do
    if [[ $(stat -c '%A' "$dir") != ?????????[xt] ]]; then
      log "postgres: adding o+x to $dir so that the postgres user can reach $PG_DIR"
      chmod o+x "$dir"
    fi
    dir=$(dirname "$dir")
  done
}

pg_init() {
  [[ -s $PG_DATA/PG_VERSION ]] && return 0
  log "postgres: creating the cluster in $PG_DATA"
  mkdir -p "$PG_DATA"
  ((EUID == 0)) && chown postgres:postgres "$PG_DATA"
  chmod 0700 "$PG_DATA"
  # shellcheck disable=SC2046 # word splitting intended: a command prefix
  $(pg_as_owner) "$PG_BIN/initdb" -D "$PG_DATA" -U postgres --auth=trust --encoding=UTF8 \
    --locale=C.UTF-8 >>"$PG_DIR/initdb.log" 2>&1 || {
    tail -n 20 "$PG_DIR/initdb.log" >&2
    return 1
  }
}

# A SIGKILLed server leaves postmaster.pid behind. PostgreSQL starts anyway when the pid
# in it is gone, but refuses ("lock file already exists") while that pid still exists,
# and a killed postmaster stays a zombie until PID 1 reaps it, which can take a while
# (a start one second after a kill failed so). A zombie is dead: wait a little for the
# reaping, then drop the stale file. A live server is left alone (PostgreSQL refuses).
#
# Its other processes outlive it too: every backend and auxiliary process has a process
# group of its own, so a kill of the postmaster's group does not reach them; they see
# the postmaster gone and exit by themselves, and until then a new server fails with
# "could not bind ... Address already in use" (a CI run, 2026-12-02). Every server
# process runs in the data directory, so wait (30 s at most) until none is left there.
pg_stale_lock() {
  local lock=$PG_DATA/postmaster.pid pid deadline=$((SECONDS + 10)) left
  local gone_by=$((SECONDS + 30)) dir
  dir=$(cd "$PG_DATA" && pwd -P)
  while left=$(pg_left_in "$dir") && ((SECONDS < gone_by)); do
    sleep 0.2
  done
  [[ -z ${left:-} ]] || log "postgres: pids $left still run in $dir after 30 s"
  [[ -s $lock ]] || return 0
  pid=$(head -n 1 "$lock" | tr -dc '0-9')
  [[ -n $pid ]] || return 0
  while [[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) == Z ]]; do
    if ((SECONDS >= deadline)); then
      log "postgres: pid $pid of postmaster.pid is a zombie; removing the stale lock file"
      rm -f "$lock"
      return 0
    fi
    sleep 0.2
  done
}

# pg_left_in DIR: the pids of live processes whose working directory is DIR (printed on
# one line); false when there are none.
pg_left_in() {
  local p found=()
  for p in /proc/[0-9]*; do
    [[ $(readlink "$p/cwd" 2>/dev/null) == "$1" ]] && found+=("${p#/proc/}")
  done
  ((${#found[@]})) && echo "${found[*]}"
}

# PostgreSQL's port (54320 + offset) lies in Linux's ephemeral range (32768-60999): while
# the server is down, an outgoing connection can get it as its local port, and a start
# then fails with "could not bind ... Address already in use" although no server
# process is left (a CI run, 2026-12-02, 15 s after a clean stop). Reserve it, when
# this machine lets us (root, or a writable sysctl); the other components' ports lie
# below the range.
pg_reserve_port() {
  local file=/proc/sys/net/ipv4/ip_local_reserved_ports have
  [[ -w $file ]] || return 0
  have=$(<"$file")
  [[ ,$have, == *",$POSTGRES_PORT,"* ]] && return 0
  echo "${have:+$have,}$POSTGRES_PORT" >"$file" 2>/dev/null ||
    log "postgres: could not reserve port $POSTGRES_PORT from the ephemeral range"
}

postgres_launch() {
  pg_reserve_port
  pg_path_reachable
  mkdir -p "$PG_DIR" "$PG_RUN"
  if ((EUID == 0)); then chown postgres:postgres "$PG_DIR" "$PG_RUN"; fi
  pg_init || return 1
  pg_stale_lock
  # Settings: listen on loopback only; fsync and synchronous_commit stay on (an append
  # that returned survives a crash of PostgreSQL: tests/stack/test_eventlog_crash.py).
  # FerretDB keeps a pool of up to 50 connections. plan_cache_mode: see
  # postgres/ferretdb-indexes.sql (FerretDB's lookups use GIN indexes only when planned
  # with their parameters).
  # shellcheck disable=SC2046 # word splitting intended: a command prefix
  spawn "$PG_DIR/postgres.log" $(pg_as_owner) "$PG_BIN/postgres" -D "$PG_DATA" \
    -c listen_addresses=127.0.0.1 \
    -c port="$POSTGRES_PORT" \
    -c unix_socket_directories="$PG_RUN" \
    -c max_connections=200 \
    -c shared_buffers=256MB \
    -c logging_collector=off \
    -c log_min_messages=warning \
    -c plan_cache_mode=force_custom_plan >"$POSTGRES_PIDFILE"
}

pg_isready() {
  "$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$POSTGRES_PORT" -U postgres
}

postgres_ready() {
  component_pid postgres >/dev/null && pg_isready
}

pg_psql() {
  "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$POSTGRES_PORT" -U postgres "$@"
}

# FerretDB's database, created once, with the event trigger that gives FerretDB's
# indexes GIN companions (postgres/ferretdb-indexes.sql; idempotent).
postgres_configure() {
  local have
  have=$(pg_psql -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$PG_FERRETDB_DB'")
  [[ $have == 1 ]] || pg_psql -d postgres -c "CREATE DATABASE $PG_FERRETDB_DB"
  pg_psql -d "$PG_FERRETDB_DB" -f "$HERE/postgres/ferretdb-indexes.sql" >/dev/null
}

# SIGTERM is PostgreSQL's "smart" shutdown (waits for clients to leave: FerretDB is
# stopped first); SIGINT is "fast" (disconnects them): use fast, like pg_ctl stop -m fast.
postgres_stop() {
  local pid
  pid=$(component_pid postgres) || return 0
  kill -INT "$pid" 2>/dev/null || return 0
  if ! wait_gone "$pid" 30; then
    log "postgres: pid $pid did not stop in 30s; killing it"
    kill_group "$pid"
  fi
}
