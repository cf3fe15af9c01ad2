#!/usr/bin/env bash
# `make demo`: the whole user path on the local platform, with the real `peertrain` CLI.
#
#   demo.sh          (after `make up`) demo user, 3 peers, MNIST 10k, an MLP job,
#                    `job watch`, model.pt in the repository root
#   demo.sh peers-down   stop the demo's peers
#
# Everything the demo makes lives in $VAR_DIR/demo (git-ignored): the user's password
# (mode 0600), the CLI's credentials, the peers' identities and logs, the CSV. It leaves
# the platform and the peers running. Tunables: DEMO_PEERS (3), DEMO_ROUNDS (8),
# PEERTRAIN_DATA_DIR (where mnist/ is; default ../shared/data, then /work/shared/data).
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$HERE/env.sh"
. "$HERE/lib.sh"

API=${PEERTRAIN_API:-http://127.0.0.1:8080}  # env.sh moves it with PEERTRAIN_PORT_OFFSET
DEMO="$VAR_DIR/demo"
PEERS=${DEMO_PEERS:-3}
ROUNDS=${DEMO_ROUNDS:-8}
export PEERTRAIN_API=$API PEERTRAIN_CONFIG_DIR="$DEMO/cli"
# Not a terminal (a CI log): tables as wide as a terminal's, not rich's default 80.
[[ -t 1 ]] || export COLUMNS=${COLUMNS:-140}

pt() { peertrain "$@"; }
step() { printf '\n\033[1m== %s\033[0m\n' "$*" >&2; }
die() { log "demo: $*"; exit 1; }
# json_get KEY: that field of the JSON document on stdin.
json_get() { python -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }

peer_pid() { pid_alive "$DEMO/peer-$1/pid" 'python.* -m peertrain\.peer run'; }

peers_down() {
  local i pid
  for ((i = 1; i <= 16; i++)); do
    [[ -d $DEMO/peer-$i ]] || continue
    if pid=$(peer_pid "$i"); then
      log "peer-$i: stopping (pid $pid)"
      stop_pid "$pid" 20
    fi
    rm -f "$DEMO/peer-$i/pid"
  done
}

data_dir() {
  local d
  for d in "${PEERTRAIN_DATA_DIR:-}" "$ROOT/../shared/data" /work/shared/data; do
    [[ -n $d && -d $d/mnist ]] && { (cd "$d" && pwd); return 0; }
  done
  die "MNIST not found: set PEERTRAIN_DATA_DIR to the folder that holds mnist/"
}

# A user named demo with a random password kept in $DEMO/password. A password that no
# longer works (the database was reset) is replaced by a new user.
demo_user() {
  local name=demo pwfile="$DEMO/password" userfile="$DEMO/username"
  if [[ -s $pwfile && -s $userfile ]]; then
    name=$(<"$userfile")
    PEERTRAIN_PASSWORD=$(<"$pwfile") pt login -u "$name" 2>/dev/null && return 0
    log "the saved demo user no longer logs in; registering a new one"
    name="demo-$(openssl rand -hex 3)"
  fi
  (umask 077 && openssl rand -base64 18 | tr -d '\n' >"$pwfile")
  export PEERTRAIN_PASSWORD
  PEERTRAIN_PASSWORD=$(<"$pwfile")
  if ! pt register -u "$name" >/dev/null 2>"$DEMO/register.err"; then
    grep -q '409' "$DEMO/register.err" || { cat "$DEMO/register.err" >&2; exit 1; }
    name="demo-$(openssl rand -hex 3)"  # "demo" belongs to an older database's password
    pt register -u "$name" >/dev/null
  fi
  echo "$name" >"$userfile"
  pt login -u "$name"
  unset PEERTRAIN_PASSWORD
}

# Enroll peer-N afresh (a new identity each run) and start it in the background.
start_peer() {
  local i=$1 dir="$DEMO/peer-$1" token threads
  token=$(pt peers enroll-token --json | json_get enrollment_token)
  PEERTRAIN_PEER_CONFIG_DIR="$dir" python -m peertrain.peer enroll --api "$API" \
    --token "$token" --name "demo-peer-$i" --force | tail -n 1 | json_get peer_id >"$dir.id"
  threads=$(($(nproc) / PEERS)); ((threads >= 1)) || threads=1
  (
    # The peer reads only PEERTRAIN_PEER_*; the CLI's settings stay out of its way.
    unset PEERTRAIN_API PEERTRAIN_CONFIG_DIR
    export PEERTRAIN_PEER_CONFIG_DIR="$dir" PEERTRAIN_PEER_THREADS=$threads
    spawn "$DEMO/logs/peer-$i.log" python -m peertrain.peer run --interval 1 >"$dir/pid"
  )
  log "peer-$i: $(<"$dir.id") (log: $DEMO/logs/peer-$i.log)"
}

peers_active() {
  local active
  active=$(pt peers ls --status active --mine --json) || return 1
  python -c 'import json,sys; seen={p["peer_id"] for p in json.loads(sys.argv[1])}
sys.exit(0 if set(sys.argv[2:]) <= seen else 1)' "$active" "$@"
}

# The orchestrator learns that a peer is online from the bus, a moment after the
# registry does: retry while it answers peers_unavailable.
create_job() {
  local deadline=$((SECONDS + 60)) err="$DEMO/create.err" job
  while :; do
    if job=$(pt job create "$@" 2>"$err"); then echo "$job"; return 0; fi
    if ! grep -q peers_unavailable "$err" || ((SECONDS >= deadline)); then
      cat "$err" >&2
      return 1
    fi
    sleep 1
  done
}

platform_ready() {
  local api
  for api in auth registry datasets jobs models; do http_ok "$API/api/$api/readyz" || return 1; done
}

main() {
  mkdir -p "$DEMO/logs"
  chmod 700 "$DEMO"
  wait_for platform 60 platform_ready || die "the platform is not ready (make up; make services-status)"

  step "demo user (password in $DEMO/password)"
  demo_user

  step "$PEERS peers"
  peers_down
  local ids=() i
  for ((i = 1; i <= PEERS; i++)); do
    start_peer "$i"
    ids+=("$(<"$DEMO/peer-$i.id")")
  done
  wait_for "peers" 120 peers_active "${ids[@]}" || die "peers did not come online (see $DEMO/logs)"
  pt peers ls --mine --status active

  step "MNIST 10k as CSV"
  local csv="$DEMO/mnist-10k.csv.gz"
  [[ -s $csv ]] || python "$ROOT/examples/mnist_csv.py" "$(data_dir)/mnist" "$csv"
  local dataset
  dataset=$(pt dataset upload "$csv" --name mnist-10k --label-column label \
    --holdout-fraction 0.2 --wait)

  step "job: MLP on $PEERS peers, $ROUNDS rounds"
  local peer_flags=() job
  for i in "${ids[@]}"; do peer_flags+=(--peer "$i"); done
  job=$(create_job --config "$ROOT/examples/mnist-mlp.yaml" --dataset "$dataset" \
    --rounds "$ROUNDS" "${peer_flags[@]}")
  log "job $job"

  step "peertrain job watch $job"
  pt job watch "$job" --interval 1 || die "job $job did not complete: pt job show $job"

  step "model"
  pt model download "$job" -o "$ROOT/model.pt"

  step "peertrain predict on the raw CSV, the job's holdout rows"
  pt predict "$csv" --model "$ROOT/model.pt" --holdout -o "$DEMO/predictions.csv"

  cat >&2 <<EOF

PeerTrain is running ($(pt whoami --json | json_get username) logged in; CLI: PEERTRAIN_CONFIG_DIR=$DEMO/cli):
  gateway     $API/api/{auth,registry,datasets,jobs,models}/
  RabbitMQ    http://127.0.0.1:$(port 15672)/  (admin / admin)
  MinIO       http://127.0.0.1:$(port 9001)/   (the stack's own keys: $MINIO_KEYS_FILE)
  Prometheus  http://127.0.0.1:$(port 9090)/
EOF
  if http_ok http://127.0.0.1:3000/api/health 2>/dev/null; then
    echo "  Grafana     http://127.0.0.1:3000/" >&2
  fi
  cat >&2 <<EOF
  model       $ROOT/model.pt  (torch.load(path, weights_only=True))
  peers       $PEERS running, logs in $DEMO/logs
Try: PEERTRAIN_CONFIG_DIR=$DEMO/cli peertrain job show $job
Stop the peers: bash deploy/local/demo.sh peers-down     the platform: make down

Web console: $API/  (log in as $(<"$DEMO/username"), password in $DEMO/password)
EOF
}

case ${1:-} in
  "") main ;;
  peers-down) peers_down ;;
  *)
    sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
