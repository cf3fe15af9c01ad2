# The PeerTrain peer runtime (`peertrain-peer`), CPU training:
#   docker build -f deploy/docker/peer.Dockerfile -t peertrain-peer .
# and on NVIDIA GPUs, the same file with torch from a CUDA wheel index (the wheel brings
# its CUDA libraries; the host needs only the driver and the NVIDIA container toolkit):
#   docker build -f deploy/docker/peer.Dockerfile -t peertrain-peer-cuda \
#     --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu128 --build-arg PEER_DEVICE=cuda .
# Multi-stage; torch from PyTorch's CPU wheel index, as in aggregator.Dockerfile. The
# entrypoint (deploy/docker/peer-entrypoint.sh) enrolls the container on its first start
# with a one-time enrollment token from the environment, then runs the peer.
ARG PYTHON=3.11-slim-bookworm

FROM python:${PYTHON} AS build
# Keep in step with uv.lock (tests/static/test_compose.py checks it).
ARG TORCH_VERSION=2.15.0
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
# The export below is piped into grep: a failing `uv export` must fail the build.
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
RUN pip install --no-cache-dir uv==0.13.9
WORKDIR /src
COPY pyproject.toml uv.lock ./
COPY libs libs
COPY services services
COPY peer-runtime peer-runtime
ENV UV_LINK_MODE=copy UV_COMPILE_BYTECODE=1 UV_PYTHON_DOWNLOADS=never
RUN uv venv /opt/venv --python /usr/local/bin/python3 \
 && uv pip install --python /opt/venv/bin/python --index-url "${TORCH_INDEX}" "torch==${TORCH_VERSION}" \
 && uv export --frozen --no-dev --no-editable --no-hashes --no-annotate --no-header \
      --package peertrain-peer \
    | grep -vE '^(torch|triton|nvidia-|cuda-)' >/tmp/requirements.txt \
 && uv pip install --python /opt/venv/bin/python --no-deps -r /tmp/requirements.txt

FROM python:${PYTHON}
ARG PEER_DEVICE=cpu
# NVIDIA_DRIVER_CAPABILITIES: what the NVIDIA container toolkit mounts from the host's
# driver when the container gets GPUs (--gpus; nvidia/cuda images set the same); the
# CPU image gets none and ignores it.
ENV PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1 \
    PEERTRAIN_PEER_CONFIG_DIR=/var/lib/peertrain/peer \
    PEERTRAIN_PEER_DEVICE=${PEER_DEVICE} \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility
RUN groupadd --gid 10001 peertrain \
 && useradd --create-home --uid 10001 --gid 10001 peertrain \
 && mkdir -p /var/lib/peertrain/peer /var/lib/peertrain/identities \
 && chown -R 10001:10001 /var/lib/peertrain \
 && chmod 0700 /var/lib/peertrain/peer /var/lib/peertrain/identities
COPY --from=build /opt/venv /opt/venv
COPY --chmod=0755 deploy/docker/peer-entrypoint.sh /usr/local/bin/peer-entrypoint
USER 10001:10001
WORKDIR /home/peertrain
# The identity (peer id and secret) survives container re-creation: an anonymous volume
# per container, which `docker compose up` carries over to the replacement container.
# With PEERTRAIN_PEER_SLOTS_DIR on a named volume (docker-compose.yml), it survives
# `down` too (see peer-entrypoint.sh).
VOLUME /var/lib/peertrain/peer
# Healthy while the runtime reports itself running (its status.json, pid alive).
HEALTHCHECK --interval=15s --timeout=10s --start-period=60s --retries=4 \
  CMD ["peer-entrypoint", "--healthcheck"]
ENTRYPOINT ["peer-entrypoint"]
CMD ["run"]
