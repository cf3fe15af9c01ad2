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
set -eu

CONFIG_DIR=${PEERTRAIN_PEER_CONFIG_DIR:?PEERTRAIN_PEER_CONFIG_DIR is not set}
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
