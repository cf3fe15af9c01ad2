# PeerTrain developer entry points. Every recipe sources deploy/local/env.sh, which puts
# the cached workspace venv first on PATH (see deploy/local/venv.sh).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

ENV := . deploy/local/env.sh &&
PY_DIRS := libs services peer-runtime tests benchmarks
# mypy: libs/common, libs/ml and libs/testkit strict (pyproject's per-module override),
# plus the services. With explicit_package_bases, module names come from MYPYPATH: one
# entry per src folder.
MYPY_SRCS := libs/common/src $(wildcard libs/ml/src) libs/client/src libs/sim/src libs/testkit/src peer-runtime/src $(sort $(wildcard services/*/src))
space := $(subst ,, )
MYPYPATH := $(subst $(space),:,$(MYPY_SRCS))
PYTEST_ARGS ?=

.PHONY: help venv console openapi stack-up stack-down stack-status services-up services-down \
	services-status up down dist redrive lint format typecheck test test-unit check-helm bench-eventlog bench-auth bench-sharding bench-heartbeats bench-aggregate bench-rounds bench-async bench-models bench-idle bench-flower bench-sim bench-compression bench-verify demo chaos

help:
	@echo "make test            venv + local stack + ruff + mypy + pytest (PYTEST_ARGS=...)"
	@echo "make test-unit       the tests that need no server, no stack and no tool builds (~1 min)"
	@echo "make up / down       local stack and every service built so far"
	@echo "make console         the web console's static files (served by the gateway at /)"
	@echo "make openapi         docs/openapi/*.json and the console's types from them (after an API change)"
	@echo "make stack-up | stack-down | stack-status"
	@echo "make dist            the peer's and the CLI's wheels, and their pins, in dist/"
	@echo "make check-helm      helm lint + template (default, production) + strict k8s.io/api decoding"
	@echo "make chaos           seeded fault schedule while jobs run (CHAOS_SEED=N)"
	@echo "make lint | format | typecheck | bench-{eventlog,auth,sharding,heartbeats,aggregate,rounds,async,models,idle,flower,sim,compression,verify} | demo"

venv:
	@bash deploy/local/venv.sh >/dev/null

# The web console's static files (web/console), which the gateway serves at /: npm ci from
# the lock file and an esbuild build, both cached outside the clone (deploy/local/console.sh).
console:
	@bash deploy/local/console.sh >/dev/null

# After changing a service's HTTP models: docs/openapi/<service>.json (deploy/openapi.py),
# then the console's types generated from them (web/console/src/openapi, types.mjs).
openapi: venv
	@$(ENV) python deploy/openapi.py
	@bash deploy/local/console.sh types

stack-up:
	@bash deploy/local/stack.sh up

stack-down:
	@bash deploy/local/stack.sh down

stack-status:
	@bash deploy/local/stack.sh status

services-up: venv
	@bash deploy/local/services.sh up

services-down:
	@bash deploy/local/services.sh down

services-status:
	@bash deploy/local/services.sh status

up: venv console stack-up services-up

# Services first: they should see the stack go away after they have stopped.
down:
	@bash deploy/local/services.sh down
	@bash deploy/local/stack.sh down
	@$(ENV) if [[ -d $$VAR_DIR-lane100 ]]; then PEERTRAIN_PORT_OFFSET=100 bash deploy/local/stack.sh down; fi

# Versioned wheels of the peer (peertrain-peer, -ml, -common) and of the CLI/SDK
# (peertrain-client), with the lock's pins of each one's packages, in dist/
# (deploy/local/dist.sh; tests/install installs them into clean venvs).
dist:
	@bash deploy/local/dist.sh

# Dead-lettered messages back into their queues once the cause is fixed (QUEUES="a b"
# for some; default every non-empty <queue>.dlq).
redrive: venv
	@$(ENV) python -m peertrain.common.bus.redrive $${QUEUES:-}

lint: venv
	@$(ENV) dirs=$$(ls -d $(PY_DIRS) 2>/dev/null) && \
		ruff check $$dirs && ruff format --check $$dirs

format: venv
	@$(ENV) dirs=$$(ls -d $(PY_DIRS) 2>/dev/null) && \
		ruff check --fix $$dirs && ruff format $$dirs

typecheck: venv
	@$(ENV) MYPYPATH=$(MYPYPATH) mypy $(addsuffix /peertrain,$(MYPY_SRCS))

# No cluster, no stack: deploy/helm/check.sh (tests/static/test_helm.py runs it in
# `make test`). Builds helm and the checker on first use (cached).
check-helm:
	@bash deploy/helm/check.sh

# Lint, typecheck and pytest all run even when one fails, so one CI run reports every
# problem; the exit status is non-zero when any of them failed. pytest runs in two lanes
# at once, each on a local stack of its own (deploy/local/test.sh); PYTEST_ARGS=... runs
# those tests in one lane. On success pytest's summary is the last line (CI reads it).
# First, before the venv and the console: refuse within a second when a port the lanes'
# services need is taken (a platform left up by make up / make demo), saying what to stop
# (deploy/local/test-preflight.sh). So venv and console are steps here, not prerequisites.
test:
	@PYTEST_ARGS="$(PYTEST_ARGS)" bash deploy/local/test-preflight.sh
	@$(MAKE) --no-print-directory venv console
	@PYTEST_ARGS="$(PYTEST_ARGS)" bash deploy/local/test.sh

# Behaviour in about a minute (on a quiet 2-core machine), with no server: domain cores, use cases on in-memory
# adapters, the simulation, the client against its fake API. Left to `make test`:
# tests/stack (servers), tests/static and tests/install (they run the tools and builds
# they check: helm, the Go checkers, hadolint, promtool, nginx, wheels) and the tests
# marked slow or external (pyproject.toml). PYTEST_ARGS=... as for `make test`.
UNIT_PATHS := libs services peer-runtime tests/contract
test-unit: venv
	@$(ENV) python -m pytest -q -m "not stack and not slow and not external" $(UNIT_PATHS) $(PYTEST_ARGS)

bench-eventlog: venv stack-up
	@$(ENV) python benchmarks/eventlog.py

bench-auth: venv stack-up
	@$(ENV) python benchmarks/auth.py

bench-sharding: venv stack-up
	@$(ENV) python benchmarks/sharding.py

bench-heartbeats: venv stack-up
	@$(ENV) python benchmarks/heartbeats.py

# Pure torch, no stack needed.
bench-aggregate: venv
	@$(ENV) python benchmarks/aggregate.py

# Needs the real stack; starts every service and 4 peers itself, runs the anchor task
# (digits, MLP, 30 rounds), pre-fills the log with BENCH_PREFILL events and runs it
# again (BENCH_PREFILL=0 skips that half: a few minutes less).
BENCH_PREFILL ?= 1000000
bench-rounds: venv stack-up
	@$(ENV) BENCH_PREFILL=$(BENCH_PREFILL) python benchmarks/rounds.py

# Needs the real stack; starts every service and 8 peers slowed by 1,1,2,2,4,4,8,8 itself:
# MNIST 10k on a Dirichlet(0.5) split, a small CNN, synchronous FedAvg then asynchronous
# FedBuff on the same peers, about 5 minutes (benchmarks/async.py; BENCH_ASYNC_MODEL=mlp,
# BENCH_SYNC_ROUNDS, BENCH_ASYNC_ROUNDS, BENCH_ASYNC_K, BENCH_LOCAL_EPOCHS).
bench-async: venv stack-up
	@$(ENV) python benchmarks/async.py

# Needs the real stack; starts every service and the peers itself: a ResNet-18 sent as
# a layer graph, 4 peers x 500 synthetic 32x32 images x 3 rounds, the same epochs in one
# process with plain torch, then 2 rounds on BENCH_MODELS_WIDE_PEERS peers (default 16;
# 0 skips) for the aggregator's memory (benchmarks/models.py; ~15 min on 2 cores).
BENCH_MODELS_WIDE_PEERS ?= 16
bench-models: venv stack-up
	@$(ENV) BENCH_MODELS_WIDE_PEERS=$(BENCH_MODELS_WIDE_PEERS) python benchmarks/models.py

# CPU of the whole platform over 60 idle seconds (stack and services; it starts the
# services that are not running and stops those again, not the stack).
bench-idle: venv stack-up
	@$(ENV) python benchmarks/idle.py

# Needs the real stack; starts every service and 8 peers itself: MNIST 10k, an MLP, a
# Dirichlet(0.5) split, the same job with updates as none, fp16, int8 and top-k 1%
# (BENCH_COMPRESSION_ROUNDS rounds each, default 40); one JSON line last
# (benchmarks/compression.py).
BENCH_COMPRESSION_ROUNDS ?= 40
bench-compression: venv stack-up
	@$(ENV) BENCH_COMPRESSION_ROUNDS=$(BENCH_COMPRESSION_ROUNDS) python benchmarks/compression.py

# No stack: bench-sim's tasks (anchor; 1,000 MNIST clients, 100 per round) on Flower
# 1.42's simulation engine, in its own cached venv (deploy/local/flower-venv.sh; the
# first run installs Flower and Ray, ~5 GB, into PEERTRAIN_CACHE).
bench-flower: venv
	@bash deploy/local/flower-venv.sh >/dev/null
	@$(ENV) python benchmarks/sim/flower.py

# No stack: bench-sim's two tasks on peertrain.sim and on Flower's simulation engine (the
# same split), one JSON line last (benchmarks/sim/bench.py; BENCH_SIM_FLOWER=0 skips Flower).
bench-sim: venv
	@if [ "$${BENCH_SIM_FLOWER:-1}" != 0 ]; then bash deploy/local/flower-venv.sh >/dev/null; fi
	@$(ENV) python benchmarks/sim/bench.py

# No stack: checked work (aggregation.verify) against one lazy peer of each kind (zeros,
# replay, noise, tenth) and 4 honest peers, digits + MLP, 30 rounds, 20 seeded runs through
# peertrain.sim (the platform's own orchestrator and aggregator); one JSON line last
# (benchmarks/verify.py; ~2 min on 2 cores).
bench-verify: venv
	@$(ENV) python benchmarks/verify.py

# Jepsen-style: 3 jobs x 4 peers x 80 rounds on 2 orchestrators and 2 aggregators while a
# schedule drawn from CHAOS_SEED (default 1) kills, stops and hangs the stack, every
# service instance and the peers; checks the invariants; one JSON line last
# (tests/stack/chaos; `make test` runs a short version).
chaos: venv stack-up
	@$(ENV) python tests/stack/chaos/run_chaos.py

# The whole user path with the real CLI: a demo user, 3 peers, MNIST 10k, an MLP job
# watched round by round, model.pt in the repository root (deploy/local/demo.sh). It
# leaves the platform and the peers running: `bash deploy/local/demo.sh peers-down`,
# then `make down`.
demo: up
	@bash deploy/local/demo.sh
