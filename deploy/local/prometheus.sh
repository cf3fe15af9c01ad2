#!/usr/bin/env bash
# shellcheck disable=SC2034 # NAME_* settings are read by lib.sh through `setting`
# Prometheus component of the local stack (Debian's package, 127.0.0.1:9090, scraping
# deploy/prometheus/prometheus.yml); sourced by stack.sh, not run by itself.

PROMETHEUS_PORT=$(port 9090)
PROMETHEUS_TIMEOUT=60
PROM_DIR="$VAR_DIR/prometheus"

PROMETHEUS_PIDFILE="$PROM_DIR/prometheus.pid"
PROMETHEUS_PATTERN="prometheus .*--storage.tsdb.path=$PROM_DIR/data"

# deploy/prometheus/prometheus.yml with every target's port moved to this stack's, and
# the alert rules beside it (its rule_files names alerts.yml).
prometheus_write_config() {
  mkdir -p "$PROM_DIR"
  cp "$ROOT/deploy/prometheus/alerts.yml" "$PROM_DIR/alerts.yml"
  perl -pe 's/127\.0\.0\.1:(\d+)/"127.0.0.1:" . ($1 + $ENV{PEERTRAIN_PORT_OFFSET})/ge' \
    "$ROOT/deploy/prometheus/prometheus.yml" >"$PROM_DIR/prometheus.yml"
}

prometheus_launch() {
  mkdir -p "$PROM_DIR/data"
  prometheus_write_config
  spawn "$PROM_DIR/prometheus.log" prometheus \
    --config.file="$PROM_DIR/prometheus.yml" \
    --storage.tsdb.path="$PROM_DIR/data" \
    --storage.tsdb.retention.time=7d \
    --web.listen-address="127.0.0.1:$PROMETHEUS_PORT" \
    --web.enable-lifecycle >"$PROM_DIR/prometheus.pid"
}

prometheus_ready() {
  component_pid prometheus >/dev/null && http_ok "http://127.0.0.1:$PROMETHEUS_PORT/-/ready"
}

# Pick up edits of prometheus.yml and alerts.yml on every `up` (a reload is cheap and harmless).
prometheus_configure() {
  prometheus_write_config
  curl -fsS -o /dev/null --max-time 5 -X POST "http://127.0.0.1:$PROMETHEUS_PORT/-/reload"
}

prometheus_stop() {
  local pid
  pid=$(component_pid prometheus) || return 0
  stop_pid "$pid" 20
}
