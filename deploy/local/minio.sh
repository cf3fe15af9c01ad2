#!/usr/bin/env bash
# shellcheck disable=SC2034 # NAME_* settings are read by lib.sh through `setting`
# MinIO component of the local stack (S3 API on 9000, console on 9001); sourced by
# stack.sh, not run by itself.

MINIO_PORT=$(port 9000)
MINIO_CONSOLE_PORT=$(port 9001)
MINIO_TIMEOUT=60
MINIO_DIR="$VAR_DIR/minio"
MINIO_BUCKET=peertrain

MINIO_PIDFILE="$MINIO_DIR/minio.pid"
MINIO_PATTERN="minio server $MINIO_DIR/data"

minio_launch() {
  mkdir -p "$MINIO_DIR/data" "$MINIO_DIR/certs"
  # --certs-dir keeps MinIO out of ~/.minio; metrics are public for local Prometheus.
  MINIO_ROOT_USER=minioadmin MINIO_ROOT_PASSWORD=minioadmin \
    MINIO_PROMETHEUS_AUTH_TYPE=public MINIO_UPDATE=off \
    spawn "$MINIO_DIR/minio.log" "$MINIO_BIN" server "$MINIO_DIR/data" \
    --address "127.0.0.1:$MINIO_PORT" \
    --console-address "127.0.0.1:$MINIO_CONSOLE_PORT" \
    --certs-dir "$MINIO_DIR/certs" >"$MINIO_DIR/minio.pid"
}

minio_ready() {
  component_pid minio >/dev/null && http_ok "http://127.0.0.1:$MINIO_PORT/minio/health/ready"
}

# Create the bucket; 409 (BucketAlreadyOwnedByYou) means it is already there.
minio_configure() {
  local code
  code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 10 \
    --aws-sigv4 "aws:amz:us-east-1:s3" --user minioadmin:minioadmin \
    -X PUT "http://127.0.0.1:$MINIO_PORT/$MINIO_BUCKET")
  [[ $code == 200 || $code == 409 ]] || { log "minio: creating bucket $MINIO_BUCKET answered $code"; return 1; }
}

minio_stop() {
  local pid
  pid=$(component_pid minio) || return 0
  stop_pid "$pid" 20
}
