#!/usr/bin/env bash
# Build (first time) or reuse (later) the web console's static files (web/console).
# `npm ci` installs the lock file's packages from the npm registry into the cache, keyed on
# package-lock.json (CONSOLE_NODE_MODULES); the build lands in CONSOLE_DIST, keyed on the
# lock, the console's sources and the OpenAPI documents (docs/openapi), so clones and CI
# runs with the same sources build once.
# Nothing is downloaded at run time: the gateway serves CONSOLE_DIST as plain files.
# Prints the build folder.
#   console.sh          build: the API types must be current, tsc checks, esbuild bundles
#   console.sh types    write the console's API types (web/console/src/openapi) from
#                       docs/openapi (`make openapi` runs deploy/openapi.py, then this)
. "$(dirname "$0")/env.sh"

if ! command -v npm >/dev/null; then
  . "$ROOT/deploy/local/install.sh" # apt_install (its main part runs only when executed)
  mkdir -p "$PEERTRAIN_CACHE/logs"
  apt_install nodejs npm
fi

install_modules() {
  modules_dir=$(dirname "$CONSOLE_NODE_MODULES")
  if [[ ! -d $CONSOLE_NODE_MODULES ]]; then
    log "console: npm ci into $modules_dir (one-time per package-lock.json)"
    tmp=$(mktemp -d "$PEERTRAIN_CACHE/console-npm.XXXXXX")
    cp "$ROOT/web/console/package.json" "$ROOT/web/console/package-lock.json" "$tmp/"
    (cd "$tmp" && npm ci --no-audit --no-fund --loglevel=error) >&2 || { rm -rf "$tmp"; exit 1; }
    mkdir -p "$(dirname "$modules_dir")"
    rm -rf "$modules_dir" && mv "$tmp" "$modules_dir"
  fi
}

# The scripts resolve their packages from their own folder: run them from a copy beside
# node_modules (the sources, the scripts and a link to the cached node_modules).
make_workdir() {
  work=$(mktemp -d "$PEERTRAIN_CACHE/console-build.XXXXXX")
  cp -r "$ROOT/web/console/build.mjs" "$ROOT/web/console/types.mjs" "$ROOT/web/console/tsconfig.json" \
    "$ROOT/web/console/src" "$work/"
  ln -s "$CONSOLE_NODE_MODULES" "$work/node_modules"
}

if [[ ${1:-} == types ]]; then
  install_modules
  make_workdir
  (cd "$work" && node types.mjs "$ROOT/docs/openapi" "$ROOT/web/console/src/openapi") >&2 ||
    { rm -rf "$work"; exit 1; }
  rm -rf "$work"
  exit 0
fi

if [[ ! -f $CONSOLE_DIST/index.html ]]; then
  install_modules
  make_workdir
  # The API types first (generated from docs/openapi: stale ones fail here, saying what
  # to run); tsc checks the types (esbuild only strips them), then esbuild bundles.
  (cd "$work" && node types.mjs --check "$ROOT/docs/openapi" src/openapi &&
    node_modules/.bin/tsc -p tsconfig.json && node build.mjs "$CONSOLE_DIST.tmp") >&2 ||
    { rm -rf "$work" "$CONSOLE_DIST.tmp"; log "console: build failed (see above)"; exit 1; }
  rm -rf "$work" "$CONSOLE_DIST"
  mv "$CONSOLE_DIST.tmp" "$CONSOLE_DIST"
  log "console: built into $CONSOLE_DIST"
fi
echo "$CONSOLE_DIST"
