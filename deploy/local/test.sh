#!/usr/bin/env bash
# `make test`: ruff, mypy and pytest, with pytest in three lanes at once.
#
# Each lane is a whole local stack of its own (deploy/local/env.sh): lane 0 is the stack
# of the README, lane k the same servers with every port moved by 100·k and its data in
# .var-lane<100·k>. A lane's tests run one after another, as before, so a test that
# kills its lane's RabbitMQ or PostgreSQL, or starts services on the platform's ports,
# meets nothing of another lane's. Lanes 1 and 2 boot while ruff and mypy run, and are
# taken down again at the end.
#
#   deploy/local/test.sh                 lint, typecheck, three lanes
#   PYTEST_ARGS="-k x" test.sh           lint, typecheck, then pytest PYTEST_ARGS in lane 0
#   LANES=1 test.sh                      everything in lane 0, one after another
#
# Lint, typecheck and pytest all run even when one fails, so one run reports every
# problem; on success pytest's summary is the last line of output.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE/../.."

# Why three lanes on two cores: alone, each lane keeps about 1.2 of them busy (tests wait
# on fault windows, timeouts and round trips), and two lanes at once kept 1.76 busy
# (2026-12-03: lane 0 alone 573 s, lane 1 alone 732 s, both at once 961 s). A third lane
# fills those waits.
#
# Lane 1: the remote peer (it restarts its lane's RabbitMQ, so it goes first, before the
# training platform is up) and the end-to-end training tests, which share one training
# platform per lane. Lane 2: the million-event log (on a training platform of its own),
# the store outages, and the 10,000-event outbox and fault tests. Lane 0: the rest.
# Alone on this machine (2026-12-03), about 455, 450 and 425 s of tests.
LANE1_ARGS=(tests/stack/test_remote_peer.py tests/stack/training
  --ignore=tests/stack/training/test_very_large_log.py
  --ignore=tests/stack/training/test_store_outage.py)
LANE2_ARGS=(tests/stack/test_outbox.py tests/stack/test_eventlog_faults.py
  tests/stack/test_broker_restart.py tests/stack/training/test_store_outage.py
  tests/stack/training/test_very_large_log.py)
LANES=${LANES:-3}
PYTEST_ARGS=${PYTEST_ARGS:-}
if [[ -n $PYTEST_ARGS ]]; then LANES=1; fi

in_lane() { PEERTRAIN_PORT_OFFSET=$((100 * $1)) "${@:2}"; }
logs=$(mktemp -d)
lanes_up=()
cleanup() {
  local k
  for k in "${lanes_up[@]}"; do in_lane "$k" bash "$HERE/stack.sh" down >/dev/null 2>&1 || true; done
  rm -rf "$logs"
}
trap cleanup EXIT

bash "$HERE/stack.sh" up || exit 1
declare -A stack_pid
if ((LANES == 3)); then
  for k in 1 2; do
    lanes_up+=("$k")
    in_lane "$k" bash "$HERE/stack.sh" up >"$logs/stack$k.log" 2>&1 &
    stack_pid[$k]=$!
  done
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
  for k in 1 2; do
    if ! wait "${stack_pid[$k]}"; then
      cat "$logs/stack$k.log" >&2
      echo "make test: lane $k's stack (ports +$((100 * k))) did not start" >&2
      exit 1
    fi
  done
  # Lane 0 leaves out what the other lanes run.
  ignore=()
  for a in "${LANE1_ARGS[@]}" "${LANE2_ARGS[@]}"; do
    [[ $a == --* ]] || ignore+=("--ignore=$a")
  done
  # --durations: each lane's slowest tests in the log, for whoever balances the lanes
  run_lane() { # K ARGS...: pytest ARGS on lane K's stack, into lane K's log
    in_lane "$1" bash -c '. deploy/local/env.sh && exec pytest --durations=15 "$@"' \
      "lane$1" "${@:2}" >"$logs/lane$1.log" 2>&1
  }
  run_lane 1 "${LANE1_ARGS[@]}" &
  lane1_pid=$!
  run_lane 2 "${LANE2_ARGS[@]}" &
  lane2_pid=$!
  pytest --durations=15 "${ignore[@]}" >"$logs/lane0.log" 2>&1
  rc0=$?
  wait "$lane1_pid"
  rc1=$?
  wait "$lane2_pid"
  rc2=$?
  echo "=== pytest, lane 1 (ports +100): ${LANE1_ARGS[*]}"
  cat "$logs/lane1.log"
  ((rc1 == 0)) || failed="$failed pytest-lane1"
  echo "=== pytest, lane 2 (ports +200): ${LANE2_ARGS[*]}"
  cat "$logs/lane2.log"
  ((rc2 == 0)) || failed="$failed pytest-lane2"
  echo "=== pytest, lane 0: the rest"
  cat "$logs/lane0.log"
  ((rc0 == 0)) || failed="$failed pytest-lane0"
fi
if [[ -n $failed ]]; then
  echo "make test: FAILED:$failed" >&2
  exit 1
fi
