#!/usr/bin/env bash
# shellcheck disable=SC2034 # NAME_* settings are read by lib.sh through `setting`
# nginx gateway component of the local stack (127.0.0.1:8080); sourced by stack.sh, not
# run by itself. Runs Debian's nginx with its prefix, config, pid file, logs and temp
# files under $VAR_DIR/gateway, never /etc/nginx.

GATEWAY_PORT=$(port 8080)
GATEWAY_TIMEOUT=20
GW_DIR="$VAR_DIR/gateway"

# render_gateway_conf MODE: the gateway template with its placeholders filled.
# local: services on 127.0.0.1:800x. docker: the compose service names, port 8000.
render_gateway_conf() {
  local mode=$1 listen access console up_auth up_registry up_dataset up_orch up_agg
  case $mode in
    local)
      listen="127.0.0.1:$GATEWAY_PORT" access=logs/access.log console=$GW_DIR/console
      # Peers on other machines: the same server, over HTTPS on the public address.
      [[ -z $PEERTRAIN_PUBLIC_ADDRESS ]] ||
        listen="$listen; listen $PEERTRAIN_PUBLIC_ADDRESS:$PUBLIC_HTTPS_PORT ssl"
      up_auth=127.0.0.1:$(port 8001) up_registry=127.0.0.1:$(port 8002)
      up_dataset=127.0.0.1:$(port 8003) up_orch=127.0.0.1:$(port 8004)
      up_agg=127.0.0.1:$(port 8005) ;;
    docker)
      listen=8080 access=/dev/stdout console=/usr/share/nginx/console
      up_auth=auth:8000 up_registry=registry:8000 up_dataset=dataset:8000
      up_orch=orchestrator:8000 up_agg=aggregator:8000 ;;
    *) log "render_gateway_conf: unknown mode $mode"; return 2 ;;
  esac
  sed -e "s|\${GATEWAY_LISTEN}|$listen|g" \
    -e "s|\${GATEWAY_ACCESS_LOG}|$access|g" \
    -e "s|\${GATEWAY_CONSOLE_ROOT}|$console|g" \
    -e "s|\${GATEWAY_AUTH_UPSTREAM}|$up_auth|g" \
    -e "s|\${GATEWAY_REGISTRY_UPSTREAM}|$up_registry|g" \
    -e "s|\${GATEWAY_DATASET_UPSTREAM}|$up_dataset|g" \
    -e "s|\${GATEWAY_ORCHESTRATOR_UPSTREAM}|$up_orch|g" \
    -e "s|\${GATEWAY_AGGREGATOR_UPSTREAM}|$up_agg|g" \
    "$ROOT/deploy/gateway/gateway.conf.template"
}

# public.conf: for peers on other machines (PEERTRAIN_PUBLIC_ADDRESS), the certificate of
# the gateway's HTTPS listener and a second server, the S3 door, that passes presigned S3
# requests of peers to MinIO over HTTPS; nothing (a comment) when the public listeners
# are off. The door's rules are those of deploy/gateway/s3-door.conf (compose's door).
render_public_conf() {
  if [[ -z $PEERTRAIN_PUBLIC_ADDRESS ]]; then
    echo "# PEERTRAIN_PUBLIC_ADDRESS is unset: loopback only"
    return 0
  fi
  cat <<EOF
ssl_certificate     $PEERTRAIN_TLS_CERT;
ssl_certificate_key $PEERTRAIN_TLS_KEY;
ssl_protocols       TLSv1.2 TLSv1.3;

# Presigned S3 requests of peers, passed to MinIO with the Host header they were signed
# for, and nothing else: a GET (HEAD) of an object with its signature in the query (a
# model, a shard), a multipart POST form to the bucket (an update). No Authorization
# header (requests signed with an account's own keys are not for this door), no listing,
# no other method, nothing of MinIO's own (/minio/: metrics, health, admin).
map \$args \$s3_door_presigned {
    "~(^|&)X-Amz-Signature=[0-9a-fA-F]{64}(&|\$)" 1;
    default 0;
}

server {
    listen $PEERTRAIN_PUBLIC_ADDRESS:$PUBLIC_S3_PORT ssl;
    server_name _;
    server_tokens off;
    access_log logs/access.log peertrain_json;
    client_max_body_size 2g;
    proxy_request_buffering off;
    proxy_buffering off;
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_set_header Host \$http_host;
    if (\$http_authorization) { return 403; }
    # MinIO's own (metrics, health, admin; no bucket has that name): never.
    location ^~ /minio/ { return 403; }
    location = /minio { return 403; }
    # An object of a bucket (S3_BUCKET, or a test's own): GET (HEAD) presigned only.
    location ~ "^/[a-z0-9][a-z0-9.-]{2,62}/." {
        limit_except GET { deny all; }
        if (\$s3_door_presigned = 0) { return 403; }
        proxy_pass http://127.0.0.1:$MINIO_PORT;
    }
    # A bucket itself: the POST form of an update, nothing else (no listing).
    location ~ "^/[a-z0-9][a-z0-9.-]{2,62}/?\$" {
        limit_except POST { deny all; }
        if (\$args) { return 403; }
        if (\$content_type !~ "^multipart/form-data;") { return 403; }
        proxy_pass http://127.0.0.1:$MINIO_PORT;
    }
    location / { return 403; }
}
EOF
}

# s3_door_keys_safe: true unless the S3 door would front a MinIO that takes its
# well-known default keys (anyone could then sign requests for every object): refused
# when this stack's keys are those, or when the MinIO running on MINIO_PORT accepts
# them (one started by an older stack.sh, before the stack had keys of its own).
s3_door_keys_safe() {
  [[ -z $PEERTRAIN_PUBLIC_ADDRESS ]] && return 0
  if [[ $MINIO_ACCESS_KEY == minioadmin || $MINIO_SECRET_KEY == minioadmin ]] ||
    minio_takes_default_keys; then
    log "gateway: MinIO takes its default keys (minioadmin): the S3 door of PEERTRAIN_PUBLIC_ADDRESS stays shut; restart MinIO with the stack's keys ($MINIO_KEYS_FILE): bash deploy/local/stack.sh up"
    return 1
  fi
}

# The web console's built files (CONSOLE_DIST, `make console`) into the prefix: nginx's
# workers run as nobody when the stack runs as root, and the cache may sit in a home
# folder they cannot enter. Without a build, / answers 404 (the API is unaffected).
gateway_copy_console() {
  local dst="$GW_DIR/console"
  if [[ ! -f $CONSOLE_DIST/index.html ]]; then
    [[ -f $dst/index.html ]] || log "gateway: no web console built (make console); / answers 404"
    return 0
  fi
  if [[ -f $dst.source ]] && [[ $(<"$dst.source") == "$CONSOLE_DIST" ]]; then return 0; fi
  rm -rf "$dst.new" && cp -r "$CONSOLE_DIST" "$dst.new" && chmod -R a+rX "$dst.new"
  rm -rf "$dst" && mv "$dst.new" "$dst"
  echo "$CONSOLE_DIST" >"$dst.source"
}

# Write the config into the prefix. Returns 0 when it changed, 1 when it did not, and
# 2 when `nginx -t` rejects it (reported as such, rather than as "did not answer").
gateway_write_config() {
  local new="$GW_DIR/conf/.new"
  public_tls || return 2
  s3_door_keys_safe || return 2
  mkdir -p "$GW_DIR/conf" "$GW_DIR/logs" "$GW_DIR/tmp" "$new"
  gateway_copy_console
  cp "$ROOT/deploy/gateway/nginx.local.conf" "$new/nginx.conf"
  render_gateway_conf local >"$new/gateway.conf"
  render_public_conf >"$new/public.conf"
  if cmp -s "$new/nginx.conf" "$GW_DIR/conf/nginx.conf" &&
    cmp -s "$new/gateway.conf" "$GW_DIR/conf/gateway.conf" &&
    cmp -s "$new/public.conf" "$GW_DIR/conf/public.conf"; then
    rm -rf "$new"
    return 1
  fi
  if ! nginx -q -t -p "$GW_DIR/" -c conf/.new/nginx.conf -e logs/error.log; then
    log "gateway: nginx rejects the rendered configuration (see above)"
    rm -rf "$new"
    return 2
  fi
  mv "$new/nginx.conf" "$new/gateway.conf" "$new/public.conf" "$GW_DIR/conf/"
  rm -rf "$new"
}

GATEWAY_PIDFILE="$GW_DIR/nginx.pid"
GATEWAY_PATTERN="nginx: master process .*-p $GW_DIR/"

gateway_launch() {
  local rc=0
  gateway_write_config || rc=$?
  ((rc != 2)) || return 1
  # daemon off: nginx's master stays the process we spawned, in its own session, so
  # `kill gateway` can take the workers down with it (they share its process group).
  spawn "$GW_DIR/logs/nginx.out" nginx -p "$GW_DIR/" -c conf/nginx.conf -e logs/error.log \
    -g 'daemon off;' >/dev/null
}

gateway_ready() {
  component_pid gateway >/dev/null && http_ok "http://127.0.0.1:$GATEWAY_PORT/healthz"
}

# On `up` with nginx already running: apply template edits with a graceful reload.
gateway_configure() {
  local pid rc=0
  gateway_write_config || rc=$?
  ((rc != 2)) || return 1
  if ((rc == 0)) && pid=$(component_pid gateway); then
    log "gateway: configuration changed, reloading nginx"
    kill -HUP "$pid"
  fi
}

gateway_stop() {
  local pid
  pid=$(component_pid gateway) || return 0
  # SIGQUIT: graceful shutdown (finish requests in flight); SIGTERM would be fast.
  kill -QUIT "$pid" 2>/dev/null || true
  wait_gone "$pid" 15 || kill_group "$pid"
}
