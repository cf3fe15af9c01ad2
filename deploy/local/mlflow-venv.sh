#!/usr/bin/env bash
# Build (first time) or reuse (later) the MLflow tracking server's environment, for the
# test of `peertrain job export --mlflow` (tests/stack/training/test_mlflow.py) and for
# trying the export by hand. The server needs the full `mlflow` package (SQLAlchemy,
# alembic, Flask, ...), which is never a project dependency: it lives in its own venv in
# the cache, keyed on its version. The client side is `mlflow-skinny`, the optional
# extra `peertrain-client[mlflow]`. Prints the venv's path; its server is
# "$venv/bin/mlflow server".
. "$(dirname "$0")/env.sh"

# 3.18.0 (newest of `mlflow`) needs mlflow-skinny 3.18.0, which the index does not have;
# 3.17.2 is the newest that installs, and the client's own version.
MLFLOW_SERVER_VERSION=3.17.2
venv="$PEERTRAIN_CACHE/venvs/mlflow-$MLFLOW_SERVER_VERSION"
mkdir -p "$PEERTRAIN_CACHE/venvs"
# make test builds it while ruff and mypy run, and the test's fixture asks too: one builder.
exec 9>"$venv.lock"
flock 9
if [[ ! -f "$venv/.complete" ]]; then
  [[ -x "$UV" ]] || bash "$ROOT/deploy/local/venv.sh" >/dev/null # installs uv too
  log "building the MLflow server venv $venv (once per MLflow version)"
  rm -rf "$venv"
  "$UV" venv --quiet --python "$UV_PROJECT_ENVIRONMENT/bin/python" "$venv"
  VIRTUAL_ENV="$venv" "$UV" pip install --quiet --python "$venv/bin/python" \
    "mlflow==$MLFLOW_SERVER_VERSION"
  touch "$venv/.complete" # only a finished install is reused
fi
echo "$venv"
