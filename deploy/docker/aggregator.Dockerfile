# The PeerTrain aggregator service (needs torch):
#   docker build -f deploy/docker/aggregator.Dockerfile -t peertrain-aggregator .
# Multi-stage. The lock pins torch from PyPI, whose Linux wheel pulls in the CUDA stack
# (gigabytes); the image takes the same torch version from PyTorch's CPU wheel index
# instead and everything else from the lock (exported, installed without resolving).
# Model versions are evaluated on the CPU (PEERTRAIN_AGGREGATOR_EVAL_DEVICE=cpu).
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
      --package peertrain-aggregator \
    | grep -vE '^(torch|triton|nvidia-|cuda-)' >/tmp/requirements.txt \
 && uv pip install --python /opt/venv/bin/python --no-deps -r /tmp/requirements.txt

FROM python:${PYTHON}
ENV PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1 \
    PEERTRAIN_AGGREGATOR_HOST=0.0.0.0 PEERTRAIN_AGGREGATOR_PORT=8000 \
    PEERTRAIN_AGGREGATOR_WORK_DIR=/var/lib/peertrain/work
RUN groupadd --gid 10001 peertrain \
 && useradd --create-home --uid 10001 --gid 10001 peertrain \
 && mkdir -p /var/lib/peertrain/work \
 && chown -R 10001:10001 /var/lib/peertrain
COPY --from=build /opt/venv /opt/venv
USER 10001:10001
WORKDIR /home/peertrain
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=5 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=3)"]
CMD ["python", "-m", "peertrain.aggregator"]
