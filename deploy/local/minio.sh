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
  # --certs-dir keeps MinIO out of ~/.minio; metrics are public for local Prometheus
  # (loopback only: the S3 door for peers on other machines does not pass /minio/).
  # The root keys are the stack's own (env.sh, $VAR_DIR/secrets/minio).
  MINIO_ROOT_USER=$MINIO_ACCESS_KEY MINIO_ROOT_PASSWORD=$MINIO_SECRET_KEY \
    MINIO_PROMETHEUS_AUTH_TYPE=public MINIO_UPDATE=off \
    spawn "$MINIO_DIR/minio.log" "$MINIO_BIN" server "$MINIO_DIR/data" \
    --address "127.0.0.1:$MINIO_PORT" \
    --console-address "127.0.0.1:$MINIO_CONSOLE_PORT" \
    --certs-dir "$MINIO_DIR/certs" >"$MINIO_DIR/minio.pid"
}

minio_ready() {
  component_pid minio >/dev/null && http_ok "http://127.0.0.1:$MINIO_PORT/minio/health/ready"
}

# minio_signed KEYS ARGS...: the HTTP status of a request to MinIO signed with KEYS
# (access:secret); 000 when it does not answer.
minio_signed() {
  local keys=$1; shift
  curl -sS -o /dev/null -w '%{http_code}' --max-time 10 \
    --aws-sigv4 "aws:amz:us-east-1:s3" --user "$keys" "$@" 2>/dev/null || true
}

# minio_takes_default_keys: true when the MinIO on MINIO_PORT accepts minioadmin.
minio_takes_default_keys() {
  [[ $(minio_signed minioadmin:minioadmin "http://127.0.0.1:$MINIO_PORT/") == 2* ]]
}

# Create the bucket; 409 (BucketAlreadyOwnedByYou) means it is already there. 403: the
# running MinIO has other root keys than the stack's, minioadmin when an older stack.sh
# (which had no keys of its own) started it: it is restarted once with the stack's keys
# (its data stays as it is; MinIO keeps nothing encrypted with its root keys).
minio_configure() {
  local code pid
  code=$(minio_signed "$MINIO_ACCESS_KEY:$MINIO_SECRET_KEY" -X PUT "http://127.0.0.1:$MINIO_PORT/$MINIO_BUCKET")
  if [[ $code == 403 ]] && pid=$(component_pid minio); then
    log "minio: pid $pid refuses the stack's keys ($MINIO_KEYS_FILE); restarting it with them"
    stop_pid "$pid" 20
    minio_launch >/dev/null
    wait_for minio "$MINIO_TIMEOUT" minio_ready || return 1
    code=$(minio_signed "$MINIO_ACCESS_KEY:$MINIO_SECRET_KEY" -X PUT "http://127.0.0.1:$MINIO_PORT/$MINIO_BUCKET")
  fi
  [[ $code == 200 || $code == 409 ]] || { log "minio: creating bucket $MINIO_BUCKET answered $code"; return 1; }
}

minio_stop() {
  local pid
  pid=$(component_pid minio) || return 0
  stop_pid "$pid" 20
}
