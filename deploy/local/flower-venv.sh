#!/usr/bin/env bash
# Build (first time) or reuse (later) the Flower benchmark environment: Flower 1.42's
# simulation engine (with Ray) for `make bench-flower` / `make bench-sim`. It is a
# separate venv, never a project dependency: it lives in the cache, keyed on
# benchmarks/sim/flower-requirements.txt. Prints the venv's path.
. "$(dirname "$0")/env.sh"

requirements="$ROOT/benchmarks/sim/flower-requirements.txt"
key="$(sha256sum "$requirements" | cut -c1-16)"
venv="$PEERTRAIN_CACHE/venvs/flower-$key"
if [[ ! -f "$venv/.complete" ]]; then
  [[ -x "$UV" ]] || bash "$ROOT/deploy/local/venv.sh" >/dev/null  # installs uv too
  log "building the Flower venv $venv (once per requirements file)"
  rm -rf "$venv"
  # The workspace venv's interpreter: the same Python, so torch's cached wheel fits.
  "$UV" venv --quiet --python "$UV_PROJECT_ENVIRONMENT/bin/python" "$venv"
  VIRTUAL_ENV="$venv" "$UV" pip install --quiet --python "$venv/bin/python" -r "$requirements"
  touch "$venv/.complete"  # only a finished install is reused
fi
echo "$venv"
