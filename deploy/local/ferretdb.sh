#!/usr/bin/env bash
# shellcheck disable=SC2034 # NAME_* settings are read by lib.sh through `setting`
# FerretDB component of the local stack (MongoDB wire protocol on PostgreSQL, see
# postgres.sh); sourced by stack.sh, not run by itself.

FERRETDB_PORT=$(port 27017)
FERRETDB_DEBUG_PORT=$(port 8088) # /debug/readyz (pings the backend), /debug/metrics
FERRETDB_TIMEOUT=60
FDB_DIR="$VAR_DIR/ferretdb"

FERRETDB_PIDFILE="$FDB_DIR/ferretdb.pid"
FERRETDB_PATTERN="ferretdb .*--state-dir=$FDB_DIR/state "

ferretdb_launch() {
  # FerretDB on its main backend, PostgreSQL (postgres.sh): equality filters are pushed
  # down as SQL and use the indexes services create, where SQLite scanned every
  # collection for every query. FerretDB connects on first use, so its database must
  # exist before it answers; PostgreSQL starts in a second or two.
  if ! postgres_ready; then
    wait_for postgres "$POSTGRES_TIMEOUT" postgres_ready || return 1
  fi
  postgres_configure || return 1
  mkdir -p "$FDB_DIR/state"
  spawn "$FDB_DIR/ferretdb.log" "$FERRETDB_BIN" \
    --handler=postgresql \
    --postgresql-url="$(pg_url)" \
    --state-dir="$FDB_DIR/state" \
    --listen-addr="127.0.0.1:$FERRETDB_PORT" \
    --debug-addr="127.0.0.1:$FERRETDB_DEBUG_PORT" \
    --telemetry=disable \
    --log-level=warn >"$FDB_DIR/ferretdb.pid"
}

ferretdb_ready() {
  component_pid ferretdb >/dev/null && port_open "$FERRETDB_PORT" &&
    http_ok "http://127.0.0.1:$FERRETDB_DEBUG_PORT/debug/readyz"
}

ferretdb_configure() { :; }

ferretdb_stop() {
  local pid
  pid=$(component_pid ferretdb) || return 0
  stop_pid "$pid" 20
}
