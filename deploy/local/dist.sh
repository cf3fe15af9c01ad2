#!/usr/bin/env bash
# `make dist`: what installs on machines outside the platform, as versioned wheels (the
# versions of the pyproject files) in dist/ (or $1):
#   the peer      peertrain-peer, peertrain-ml, peertrain-common (without its `service`
#                 extra: no FastAPI, FastStream, PyMongo, aiobotocore)
#   the CLI/SDK   peertrain-client (peertrain-common and peertrain-ml only for
#                 `peertrain predict` / `convert`, which import them when they run)
# and, beside them, the lock's pins of each one's third-party packages (PEP 751:
# pylock.peer.toml, pylock.client.toml) for an install that is exactly the tested one:
#   uv pip install -r dist/pylock.peer.toml
#   uv pip install --no-deps dist/peertrain_{common,ml,peer}-*.whl
# (pip install dist/peertrain_{common,ml,peer}-*.whl resolves the same pins from PyPI).
# tests/install installs them into clean venvs. UV_OFFLINE=1 builds from the cache.
. "$(dirname "$0")/env.sh"

out="$(mkdir -p "${1:-$ROOT/dist}" && cd "${1:-$ROOT/dist}" && pwd)"
[[ -x "$UV" ]] || bash "$ROOT/deploy/local/venv.sh" >/dev/null # installs uv too
cd "$ROOT"
rm -f "$out"/peertrain_*.whl "$out"/pylock.*.toml
for package in peertrain-common peertrain-ml peertrain-peer peertrain-client; do
  "$UV" build --quiet --wheel --package "$package" --out-dir "$out"
done
for install in peer client; do
  "$UV" export --quiet --frozen --format pylock.toml --package "peertrain-$install" \
    --no-dev --no-emit-workspace --output-file "$out/pylock.$install.toml"
done
ls "$out"
