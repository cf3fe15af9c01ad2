#!/usr/bin/env bash
# `make test`: ruff, mypy and pytest, with pytest in two lanes at once.
#
# Each lane is a whole local stack of its own (deploy/local/env.sh): lane 0 is the stack
# of docs/operations.md, lane 1 the same servers with every port moved by LANE1_OFFSET and its
# data in .var-lane<offset>. A lane's tests run one after another, as before, so a test
# that kills its lane's RabbitMQ or PostgreSQL, or starts services on the platform's
# ports, meets nothing of the other lane's. Lane 1 boots while ruff and mypy run, and is
# taken down again at the end.
#
#   deploy/local/test.sh                 lint, typecheck, both lanes
#   PYTEST_ARGS="-k x" test.sh           lint, typecheck, then pytest PYTEST_ARGS in lane 0
#   LANES=1 test.sh                      everything in lane 0, one after another
#
# Lane 1 runs LANE1_PATHS (end-to-end training, the outbox and the remote peer: about
# half of the suite's time); lane 0 runs the rest. Lint, typecheck and pytest all run even when one fails, so
# one run reports every problem; on success pytest's summary is the last line of output.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE/../.."

LANE1_OFFSET=${LANE1_OFFSET:-100}
# The end-to-end training tests, which share one training platform per lane, and two
# tests that balance the lanes: the 10,000-event outbox test (at b74c310, without it:
# lane 0 20.5 minutes, lane 1 18.8) and the remote peer (2026-12-02, without it: lane 0 18.6,
# lane 1 16.2; it takes 1 to 1.5 minutes). The remote peer goes first: it
# restarts its lane's RabbitMQ, before the training platform is up.
# 2026-12-04: the MNIST run of a researcher's own residual module (test_own_module_mnist,
# 20 rounds and its central baseline: about 7 minutes) joined the training tests, so
# the outbox and remote-peer tests went back to lane 0.
LANE1_PATHS=(tests/stack/chaos tests/stack/training)
LANES=${LANES:-2}
PYTEST_ARGS=${PYTEST_ARGS:-}
if [[ -n $PYTEST_ARGS ]]; then LANES=1; fi

lane1() { PEERTRAIN_PORT_OFFSET=$LANE1_OFFSET "$@"; }
logs=$(mktemp -d)
lane1_stack=""
cleanup() {
  if [[ -n $lane1_stack ]]; then lane1 bash "$HERE/stack.sh" down >/dev/null 2>&1 || true; fi
  rm -rf "$logs"
}
trap cleanup EXIT

# make test ran it already; again for a direct run of this script.
bash "$HERE/test-preflight.sh" || exit 1
bash "$HERE/stack.sh" up || exit 1
if ((LANES == 2)); then
  lane1_stack=1
  lane1 bash "$HERE/stack.sh" up >"$logs/stack1.log" 2>&1 &
  stack1_pid=$!
fi

# The MLflow server's venv for tests/stack/training/test_mlflow.py, built the first time
# while the lint runs (a no-op later; the test's fixture waits on the same lock).
bash "$HERE/mlflow-venv.sh" >"$logs/mlflow-venv.log" 2>&1 &

failed=""
make --no-print-directory lint || failed="$failed lint"
make --no-print-directory typecheck || failed="$failed typecheck"

# shellcheck source=/dev/null
. "$HERE/env.sh"
set +e # env.sh sets -e; a failing step must not end the run
if ((LANES == 1)); then
  # shellcheck disable=SC2086 # PYTEST_ARGS is word-split on purpose
  pytest $PYTEST_ARGS || failed="$failed pytest"
else
  if ! wait "$stack1_pid"; then
    cat "$logs/stack1.log" >&2
    echo "make test: lane 1's stack (ports +$LANE1_OFFSET) did not start" >&2
    exit 1
  fi
  ignore=()
  for p in "${LANE1_PATHS[@]}"; do ignore+=("--ignore=$p"); done
  # --durations: each lane's slowest tests in the log, for whoever balances the lanes
  (lane1 bash -c '. deploy/local/env.sh && exec pytest --durations=15 "$@"' lane1 "${LANE1_PATHS[@]}") \
    >"$logs/lane1.log" 2>&1 &
  lane1_pid=$!
  pytest --durations=15 "${ignore[@]}" >"$logs/lane0.log" 2>&1
  rc0=$?
  wait "$lane1_pid"
  rc1=$?
  echo "=== pytest, lane 1 (ports +$LANE1_OFFSET): ${LANE1_PATHS[*]}"
  cat "$logs/lane1.log"
  ((rc1 == 0)) || failed="$failed pytest-lane1"
  echo "=== pytest, lane 0: the rest"
  cat "$logs/lane0.log"
  ((rc0 == 0)) || failed="$failed pytest-lane0"
fi
if [[ -n $failed ]]; then
  echo "make test: FAILED:$failed" >&2
  exit 1
fi
