# The PeerTrain orchestrator service:
#   docker build -f deploy/docker/orchestrator.Dockerfile -t peertrain-orchestrator .
# Multi-stage: uv installs peertrain-orchestrator (and peertrain-common) from the lock into a venv,
# non-editable; the runtime stage holds that venv only and runs as a non-root user.

ARG PYTHON=3.11-slim-bookworm

FROM python:${PYTHON} AS build
RUN pip install --no-cache-dir uv==0.13.9
WORKDIR /src
COPY pyproject.toml uv.lock ./
COPY libs libs
COPY services services
COPY peer-runtime peer-runtime
ENV UV_PROJECT_ENVIRONMENT=/opt/venv UV_LINK_MODE=copy UV_COMPILE_BYTECODE=1 UV_PYTHON_DOWNLOADS=never
RUN uv sync --frozen --no-dev --no-editable --package peertrain-orchestrator

FROM python:${PYTHON}
ENV PATH=/opt/venv/bin:$PATH PYTHONUNBUFFERED=1 \
    PEERTRAIN_ORCHESTRATOR_HOST=0.0.0.0 PEERTRAIN_ORCHESTRATOR_PORT=8000
RUN groupadd --gid 10001 peertrain \
 && useradd --create-home --uid 10001 --gid 10001 peertrain \
 && mkdir -p /var/lib/peertrain \
 && chown -R 10001:10001 /var/lib/peertrain
COPY --from=build /opt/venv /opt/venv
USER 10001:10001
WORKDIR /home/peertrain
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=5 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=3)"]
CMD ["python", "-m", "peertrain.orchestrator"]
