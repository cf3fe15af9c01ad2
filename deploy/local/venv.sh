#!/usr/bin/env bash
# Build (first time) or reuse (later) the workspace's virtual environment.
# The venv lives in the cache, keyed on uv.lock, so CI clones and later sessions reuse it;
# `uv sync` only re-points the editable workspace members at this clone.
. "$(dirname "$0")/env.sh"

if [[ ! -x "$UV" ]]; then
  log "installing uv $UV_VERSION into $PEERTRAIN_CACHE"
  python3 -m venv "$PEERTRAIN_CACHE/uv-$UV_VERSION"
  "$PEERTRAIN_CACHE/uv-$UV_VERSION/bin/pip" install -q "uv==$UV_VERSION"
fi
mkdir -p "$PEERTRAIN_CACHE/venvs"
cd "$ROOT"
"$UV" sync --frozen --all-packages --quiet
echo "$UV_PROJECT_ENVIRONMENT"
