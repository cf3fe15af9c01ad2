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
# Re-install the workspace's own (editable, tiny) packages so their .pth files point at
# this checkout; third-party packages are reused as they are.
members=()
for pp in libs/*/pyproject.toml services/*/pyproject.toml peer-runtime/pyproject.toml; do
  members+=(--reinstall-package "$(sed -n 's/^name = "\(.*\)"/\1/p' "$pp" | head -n1)")
done
"$UV" sync --frozen --all-packages --quiet "${members[@]}"
echo "$UV_PROJECT_ENVIRONMENT"
