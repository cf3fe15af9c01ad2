# The PeerTrain gateway: nginx with the web console's static files built in.
#   docker build -f deploy/docker/gateway.Dockerfile -t peertrain/gateway .
# Multi-stage: node installs web/console's packages from its package-lock.json (npm ci),
# checks the types (tsc) and bundles (esbuild); the runtime stage is nginx's unprivileged
# image (the official nginx build, run as the user nginx, uid 101: it listens on 8080 and
# 8443/9443 only, keeps its pid and temporary files in /tmp, and its entrypoint renders
# /etc/nginx/templates into conf.d/, which that user owns) plus the built folder,
# /usr/share/nginx/console (GATEWAY_CONSOLE_ROOT). The routes are
# deploy/gateway/gateway.conf.template, which docker-compose.yml mounts as before. TLS
# keys handed in as compose secrets must be readable by uid 101 (docs/operations.md).
ARG NODE=20.19.5-bookworm-slim

FROM node:${NODE} AS build
WORKDIR /src
COPY web/console/package.json web/console/package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY web/console/tsconfig.json web/console/build.mjs ./
# src/openapi (the API's types) is committed; make console checks it against docs/openapi.
COPY web/console/src src
RUN node_modules/.bin/tsc -p tsconfig.json && node build.mjs /console

FROM nginxinc/nginx-unprivileged:1.27.5-alpine
COPY --from=build /console /usr/share/nginx/console
USER 101
HEALTHCHECK --interval=10s --timeout=5s --retries=5 \
  CMD ["/bin/sh", "-c", "wget -q -O /dev/null http://127.0.0.1:8080/healthz || exit 1"]
