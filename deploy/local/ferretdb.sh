#!/usr/bin/env bash
# shellcheck disable=SC2034 # NAME_* settings are read by lib.sh through `setting`
# FerretDB component of the local stack (MongoDB wire protocol on SQLite); sourced by
# stack.sh, not run by itself.

FERRETDB_PORT=27017
FERRETDB_DEBUG_PORT=8088 # /debug/readyz (pings the backend), /debug/metrics
FERRETDB_TIMEOUT=60
FDB_DIR="$VAR_DIR/ferretdb"

FERRETDB_PIDFILE="$FDB_DIR/ferretdb.pid"
FERRETDB_PATTERN="ferretdb .*--sqlite-url=file:$FDB_DIR/data/"

ferretdb_launch() {
  # --sqlite-url must name an existing directory and end with a slash.
  # _txlock=immediate: FerretDB's transactions read before they write; with SQLite's
  # default deferred locking, two concurrent writers then fail at once with SQLITE_BUSY
  # instead of waiting (busy_timeout only applies to a lock taken at BEGIN).
  # synchronous(normal): in WAL mode a commit survives a crash of any process (SIGKILL
  # included) but not a power cut of the machine; it saves an fsync per write, which
  # is most of the cost of each event append here. Compose runs real MongoDB.
  mkdir -p "$FDB_DIR/data" "$FDB_DIR/state"
  spawn "$FDB_DIR/ferretdb.log" "$FERRETDB_BIN" \
    --handler=sqlite \
    --sqlite-url="file:$FDB_DIR/data/?_txlock=immediate&_pragma=synchronous(normal)" \
    --state-dir="$FDB_DIR/state" \
    --listen-addr="127.0.0.1:$FERRETDB_PORT" \
    --debug-addr="127.0.0.1:$FERRETDB_DEBUG_PORT" \
    --telemetry=disable \
    --log-level=info >"$FDB_DIR/ferretdb.pid"
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
