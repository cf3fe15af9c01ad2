#!/bin/sh
# Entrypoint of the peer image: enroll on the first start, then run the peer.
#
# A peer needs an identity (peer id + secret) before it can run; it gets one by redeeming
# a one-time enrollment token that a user created (`peertrain peers enroll-token`, or
# POST /api/auth/peer-enrollments). When $PEERTRAIN_PEER_CONFIG_DIR holds no identity
# yet, this script redeems the first token that still works from
#   PEERTRAIN_PEER_ENROLLMENT_TOKENS   several tokens, separated by commas or spaces
#   PEERTRAIN_PEER_ENROLLMENT_TOKEN    one token
# so `docker compose up --scale peer=3` works with three tokens in the list: replicas
# race for them, a token redeemed by another replica is refused, and each replica moves
# on to the next. The identity stays in the container's volume: later starts skip this.
#
#   PEERTRAIN_PEER_API    the gateway (default http://gateway:8080)
#   PEERTRAIN_PEER_NAME   the peer's name (default: the container's hostname)
#   PEERTRAIN_PEER_SLOTS_DIR  a volume shared by the replicas (a compose named volume):
#       each replica takes the first slot directory <dir>/<n> that no running replica
#       holds (flock on <dir>/<n>.lock, held by the runtime until it exits) and keeps
#       its identity there, so identities survive `docker compose down` then `up`.
#
# `peer-entrypoint --healthcheck`: healthy while the runtime of this container's slot
# reports itself running (the container's healthcheck).
set -eu

CONFIG_DIR=${PEERTRAIN_PEER_CONFIG_DIR:?PEERTRAIN_PEER_CONFIG_DIR is not set}
SLOT_FILE=/tmp/peertrain-peer-slot

if [ "${1:-}" = "--healthcheck" ]; then
  if [ -s "$SLOT_FILE" ]; then PEERTRAIN_PEER_CONFIG_DIR=$(cat "$SLOT_FILE"); fi
  export PEERTRAIN_PEER_CONFIG_DIR
  exec python -c "import json, subprocess, sys; out = subprocess.run(['peertrain-peer', 'status', '--json'], capture_output=True, text=True, timeout=8).stdout; sys.exit(0 if json.loads(out or '{}').get('running') else 1)"
fi

if [ -n "${PEERTRAIN_PEER_SLOTS_DIR:-}" ]; then
  n=1
  while :; do
    if [ "$n" -gt 1024 ]; then
      echo "peer-entrypoint: every slot in $PEERTRAIN_PEER_SLOTS_DIR is held" >&2
      exit 75
    fi
    exec 9>>"$PEERTRAIN_PEER_SLOTS_DIR/$n.lock"
    if flock -n 9; then break; fi
    exec 9>&-
    n=$((n + 1))
  done
  CONFIG_DIR="$PEERTRAIN_PEER_SLOTS_DIR/$n"
  mkdir -p "$CONFIG_DIR" && chmod 0700 "$CONFIG_DIR"
  echo "$CONFIG_DIR" >"$SLOT_FILE"
  PEERTRAIN_PEER_CONFIG_DIR=$CONFIG_DIR
  export PEERTRAIN_PEER_CONFIG_DIR
fi
API=${PEERTRAIN_PEER_API:-http://gateway:8080}
NAME=${PEERTRAIN_PEER_NAME:-$(hostname)}
TOKENS=$(printf '%s %s' "${PEERTRAIN_PEER_ENROLLMENT_TOKENS:-}" "${PEERTRAIN_PEER_ENROLLMENT_TOKEN:-}" | tr ',' ' ')

enroll() {
  # A few passes over the list: the gateway may still be starting on the first one.
  for pass in 1 2 3 4 5; do
    for token in $TOKENS; do
      if peertrain-peer enroll --token "$token" --api "$API" --name "$NAME" \
        --config-dir "$CONFIG_DIR"; then
        return 0
      fi
    done
    echo "peer-entrypoint: no enrollment token worked (pass $pass); retrying" >&2
    sleep $((pass * 3))
  done
  return 1
}

if [ ! -s "$CONFIG_DIR/identity.json" ]; then
  if [ -z "$(echo "$TOKENS" | tr -d ' ')" ]; then
    echo "peer-entrypoint: no identity in $CONFIG_DIR and no enrollment token: set" \
      "PEERTRAIN_PEER_ENROLLMENT_TOKENS (one unused token per replica)" >&2
    exit 78
  fi
  enroll || {
    echo "peer-entrypoint: enrollment failed: every token is used, expired or invalid" >&2
    exit 78
  }
fi

exec peertrain-peer "$@"
