#!/usr/bin/env bash
# shellcheck disable=SC2034 # NAME_* settings are read by lib.sh through `setting`
# RabbitMQ component of the local stack; sourced by stack.sh, not run by itself.
#
# Debian's /usr/sbin/rabbitmq-* wrappers `su` to the rabbitmq user and use /var/lib;
# we call the scripts in /usr/lib/rabbitmq/bin directly, as the current user, with
# every path (database, logs, config, plugins file, Erlang cookie) under $VAR_DIR.

RABBITMQ_PORT=$(port 5672)
RABBITMQ_MGMT_PORT=$(port 15672)
RABBITMQ_PROMETHEUS_PORT=$(port 15692)
# One node per stack (the second lane's beside the first, sharing epmd), with Erlang
# distribution on the AMQP port + 20000 (RabbitMQ's own default for 5672).
if ((PEERTRAIN_PORT_OFFSET)); then RABBITMQ_NODE="peertrain$PEERTRAIN_PORT_OFFSET@localhost"; else RABBITMQ_NODE=peertrain@localhost; fi
RABBITMQ_TIMEOUT=120
RMQ_DIR="$VAR_DIR/rabbitmq"
RMQ_BIN=/usr/lib/rabbitmq/bin

# The environment shared by the server and its CLI tools. The rabbitmq-env.conf file
# carries the same settings, so `rabbitmq_cli rabbitmqctl ...` reaches the same node.
rabbitmq_env() {
  export HOME="$RMQ_DIR/home" # the Erlang cookie lives in $HOME/.erlang.cookie
  export RABBITMQ_CONF_ENV_FILE="$RMQ_DIR/rabbitmq-env.conf"
  export RABBITMQ_NODENAME=$RABBITMQ_NODE
  export RABBITMQ_DIST_PORT=$((RABBITMQ_PORT + 20000))
  export RABBITMQ_MNESIA_BASE="$RMQ_DIR/mnesia"
  export RABBITMQ_LOG_BASE="$RMQ_DIR/log"
  export RABBITMQ_PID_FILE="$RMQ_DIR/rabbitmq.pid"
  export RABBITMQ_CONFIG_FILE="$RMQ_DIR/rabbitmq.conf"
  export RABBITMQ_ADVANCED_CONFIG_FILE="$RMQ_DIR/advanced.config"
  export RABBITMQ_ENABLED_PLUGINS_FILE="$RMQ_DIR/enabled_plugins"
  export ERL_CRASH_DUMP="$RMQ_DIR/log/erl_crash.dump"
  # epmd (started by the first Erlang node) and Erlang distribution: loopback only.
  export ERL_EPMD_ADDRESS=127.0.0.1
  # +sbwt none (and its dirty-scheduler twins): schedulers sleep when idle instead of
  # spinning first; the spinning was most of an idle node's CPU (make bench-idle).
  export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1} +sbwt none +sbwtdcpu none +sbwtdio none"
}

rabbitmq_cli() {
  (rabbitmq_env && "$RMQ_BIN/$1" "${@:2}")
}

rabbitmq_write_config() {
  mkdir -p "$RMQ_DIR/home" "$RMQ_DIR/mnesia" "$RMQ_DIR/log"
  # Plugins are enabled offline, by file: no CLI round trip, no running node needed.
  echo '[rabbitmq_management,rabbitmq_prometheus].' >"$RMQ_DIR/enabled_plugins"
  [[ -e $RMQ_DIR/advanced.config ]] || echo '[].' >"$RMQ_DIR/advanced.config"
  # default_user* only act when the database is created: the first boot makes admin
  # (and no guest at all). rabbitmq_configure enforces it for older data directories.
  cat >"$RMQ_DIR/rabbitmq.conf" <<EOF
listeners.tcp.default = 127.0.0.1:$RABBITMQ_PORT
management.tcp.ip = 127.0.0.1
management.tcp.port = $RABBITMQ_MGMT_PORT
prometheus.tcp.ip = 127.0.0.1
prometheus.tcp.port = $RABBITMQ_PROMETHEUS_PORT
default_user = admin
default_pass = admin
default_user_tags.administrator = true
default_permissions.configure = .*
default_permissions.read = .*
default_permissions.write = .*
log.file.level = info
log.console = false
# A larger publish closes its channel (peertrain.common.bus.topology.MAX_MESSAGE_BYTES).
max_message_size = 8388608
# admin is for the services on this machine: refused from any other address, whatever
# listeners are open (peers have users of their own, made by the registry).
loopback_users.guest = true
loopback_users.admin = true
EOF
  # Peers on other machines (PEERTRAIN_PUBLIC_ADDRESS): AMQPS there, nothing else.
  if [[ -n $PEERTRAIN_PUBLIC_ADDRESS ]]; then
    cat >>"$RMQ_DIR/rabbitmq.conf" <<EOF
listeners.ssl.public = $PEERTRAIN_PUBLIC_ADDRESS:$PUBLIC_AMQPS_PORT
ssl_options.certfile = $PEERTRAIN_TLS_CERT
ssl_options.keyfile = $PEERTRAIN_TLS_KEY
ssl_options.verify = verify_none
ssl_options.fail_if_no_peer_cert = false
EOF
  fi
  cat >"$RMQ_DIR/rabbitmq-env.conf" <<EOF
# Same settings as deploy/local/rabbitmq.sh exports; for CLI tools run by hand:
#   HOME=$RMQ_DIR/home RABBITMQ_CONF_ENV_FILE=$RMQ_DIR/rabbitmq-env.conf $RMQ_BIN/rabbitmqctl status
NODENAME=$RABBITMQ_NODE
DIST_PORT=$((RABBITMQ_PORT + 20000))
MNESIA_BASE=$RMQ_DIR/mnesia
LOG_BASE=$RMQ_DIR/log
PID_FILE=$RMQ_DIR/rabbitmq.pid
CONFIG_FILE=$RMQ_DIR/rabbitmq.conf
ADVANCED_CONFIG_FILE=$RMQ_DIR/advanced.config
ENABLED_PLUGINS_FILE=$RMQ_DIR/enabled_plugins
EOF
}

# The real server is the Erlang VM (beam.smp); RabbitMQ writes its OS pid to the file.
# Its command line names our $HOME (the node name is set later, inside the VM).
RABBITMQ_PIDFILE="$RMQ_DIR/rabbitmq.pid"
RABBITMQ_PATTERN="beam\.smp.* -home $RMQ_DIR/home "

rabbitmq_launch() {
  public_tls || return 1
  rabbitmq_write_config
  # A SIGKILLed node leaves its pid file behind; remove it so that a waiter does not
  # mistake it for the new node's.
  rm -f "$RMQ_DIR/rabbitmq.pid"
  (cd "$RMQ_DIR" && rabbitmq_env && spawn "$RMQ_DIR/log/startup.log" "$RMQ_BIN/rabbitmq-server") >/dev/null
}

# AMQP listening and the management API answering: the node has finished booting
# (listeners open last, after durable queues are recovered). Any HTTP status will do:
# whether admin can log in yet is rabbitmq_configure's business, not readiness.
rabbitmq_ready() {
  component_pid rabbitmq >/dev/null && port_open "$RABBITMQ_PORT" &&
    [[ $(curl -sS -o /dev/null -w '%{http_code}' --max-time 2 \
      "http://127.0.0.1:$RABBITMQ_MGMT_PORT/api/overview" 2>/dev/null) != 000 ]]
}

# Users: admin/admin administrator with full rights on vhost "/", no guest. Checked
# through the management API (milliseconds); fixed with rabbitmqctl only when needed.
rabbitmq_users_ok() {
  local api="http://127.0.0.1:$RABBITMQ_MGMT_PORT/api"
  [[ $(curl -fsS --max-time 5 -u admin:admin "$api/whoami" 2>/dev/null) == *administrator* ]] &&
    curl -fsS -o /dev/null --max-time 5 -u admin:admin "$api/permissions/%2F/admin" 2>/dev/null &&
    [[ $(curl -sS -o /dev/null -w '%{http_code}' --max-time 5 -u admin:admin "$api/users/guest") == 404 ]]
}

# Every queue is bounded in messages and bytes, by policies rather than queue arguments,
# so queues declared before a bound get it too (the broker refuses to declare a queue
# again with other arguments). The one of highest priority that matches applies; these
# are peertrain.common.bus.topology.QUEUE_POLICIES (a stack test compares them):
# events reject-publish (the relay keeps the event and tries again), peer telemetry
# tighter and reject-publish, a peer's own queue and dead letters drop-head.
# docker-compose.yml sets the same.
declare -gA RABBITMQ_POLICIES=(
  [peertrain-queue-bound]='{"pattern":".*","apply-to":"queues","priority":0,"definition":{"max-length":1000000,"max-length-bytes":1073741824,"overflow":"reject-publish"}}'
  [peertrain-dlq-bound]='{"pattern":"\\.dlq$","apply-to":"queues","priority":1,"definition":{"max-length":10000,"max-length-bytes":268435456,"overflow":"drop-head"}}'
  [peertrain-telemetry-bound]='{"pattern":"\\.(updates|peers|presence|heartbeats)$","apply-to":"queues","priority":2,"definition":{"max-length":100000,"max-length-bytes":134217728,"overflow":"reject-publish"}}'
  [peertrain-peer-queue-bound]='{"pattern":"^peer\\.[^.]+$","apply-to":"queues","priority":2,"definition":{"max-length":1000,"max-length-bytes":16777216,"overflow":"drop-head"}}'
)

rabbitmq_policies() {
  local name
  for name in "${!RABBITMQ_POLICIES[@]}"; do
    curl -fsS -o /dev/null --max-time 5 -u admin:admin -X PUT -H 'content-type: application/json' \
      -d "${RABBITMQ_POLICIES[$name]}" "http://127.0.0.1:$RABBITMQ_MGMT_PORT/api/policies/%2F/$name" ||
      return 1
  done
}

rabbitmq_configure() {
  rabbitmq_users_ok && { rabbitmq_policies; return; }
  log "rabbitmq: setting up user admin, removing guest"
  rabbitmq_cli rabbitmqctl -q add_user admin admin 2>/dev/null ||
    rabbitmq_cli rabbitmqctl -q change_password admin admin
  rabbitmq_cli rabbitmqctl -q set_user_tags admin administrator
  rabbitmq_cli rabbitmqctl -q set_permissions -p / admin '.*' '.*' '.*'
  rabbitmq_cli rabbitmqctl -q delete_user guest 2>/dev/null || true
  rabbitmq_users_ok && rabbitmq_policies
}

# SIGTERM on the VM is a graceful shutdown (RabbitMQ's own signal handler).
rabbitmq_stop() {
  local pid
  pid=$(component_pid rabbitmq) || return 0
  stop_pid "$pid" 60
}

# epmd outlives the node by design; take it down with the stack when no other Erlang
# node on this machine is registered in it.
rabbitmq_after_down() {
  if command -v epmd >/dev/null && [[ $(epmd -names 2>/dev/null) != *$'\nname '* ]]; then
    epmd -kill >/dev/null 2>&1 || true
  fi
}
