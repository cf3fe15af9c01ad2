# The PeerTrain gateway: nginx with the web console's static files built in.
#   docker build -f deploy/docker/gateway.Dockerfile -t peertrain/gateway .
# Multi-stage: node installs web/console's packages from its package-lock.json (npm ci),
# checks the types (tsc) and bundles (esbuild); the runtime stage is the stock nginx image
# plus the built folder, /usr/share/nginx/console (GATEWAY_CONSOLE_ROOT). The routes are
# deploy/gateway/gateway.conf.template, which docker-compose.yml mounts as before.
ARG NODE=20.19.5-bookworm-slim

FROM node:${NODE} AS build
WORKDIR /src
COPY web/console/package.json web/console/package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY web/console/tsconfig.json web/console/build.mjs ./
COPY web/console/src src
RUN node_modules/.bin/tsc -p tsconfig.json && node build.mjs /console

FROM nginx:1.27.5-alpine
COPY --from=build /console /usr/share/nginx/console
