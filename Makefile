# langgraph-checkpoint-otel developer entry points.
# Every target sets up .venv on its own (fresh Debian 12, root or not, Python >= 3.11).

SHELL       := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON      ?= python3
VENV        := .venv
BIN         := $(VENV)/bin
STAMP       := $(VENV)/.installed-dev
PYTEST_ARGS ?=
SUITE_STAMP := $(VENV)/.installed-langgraph-suite
BENCH_STAMP := $(VENV)/.installed-bench
LANGGRAPH_SUITE_ARGS ?=

.DEFAULT_GOAL := test
.PHONY: venv demo test test-fast bench lint clean postgres-server tools langgraph-suite

## venv: create .venv and install the project editable with the dev extras
venv: $(STAMP)

# Reinstalls whenever pyproject.toml changes.
$(STAMP): pyproject.toml Makefile
	@if [ ! -x "$(BIN)/python" ]; then \
	  echo "==> creating $(VENV) with $$($(PYTHON) --version 2>&1)"; \
	  if ! $(PYTHON) -m venv "$(VENV)"; then \
	    rm -rf "$(VENV)"; \
	    if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	      echo "==> '$(PYTHON) -m venv' failed: installing Debian python3-venv"; \
	      apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y python3-venv; \
	      $(PYTHON) -m venv "$(VENV)"; \
	    else \
	      echo "ERROR: '$(PYTHON) -m venv' failed; install python3-venv (Debian) and retry." >&2; \
	      exit 1; \
	    fi; \
	  fi; \
	fi
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
# OpenLIT without its dependencies: as a requirement it would move opentelemetry-* to
# 1.45.0/0.66b0 and anthropic to 0.125 (tests/integration/test_peers_together.py, docs/peers.md)
	$(BIN)/python -m pip install --quiet --no-deps 'openlit==1.45.0'
	@touch "$(STAMP)"

## postgres-server: make sure the PostgreSQL server binaries exist (tests start their own server)
postgres-server:
	@if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
	  :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "==> PostgreSQL server binaries missing: installing the Debian 'postgresql' package"; \
	  apt-get update; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql; \
	  ls /usr/lib/postgresql/*/bin/initdb >/dev/null; \
	else \
	  echo "WARNING: PostgreSQL server binaries (/usr/lib/postgresql/*/bin/initdb) not found," >&2; \
	  echo "         and not running as root, so not installing them." >&2; \
	  echo "         Install with: sudo apt-get install -y postgresql" >&2; \
	  echo "         Without them the PostgreSQL tests are skipped (a failure when CI=true)." >&2; \
	fi

## test: lint, then the whole pytest suite, with a real PostgreSQL started by the test session,
## then LangGraph's own test suite through the wrapper (langgraph-suite)
test: venv postgres-server tools lint $(SUITE_STAMP)
	$(BIN)/pytest $(PYTEST_ARGS)
	$(BIN)/python scripts/langgraph_suite/run.py $(LANGGRAPH_SUITE_ARGS)
	$(BIN)/python scripts/langgraph_versions/run.py --skip-same $(LANGGRAPH_VERSIONS_ARGS)

## test-fast: the unit tests alone (tests/unit: pure, no servers, no subprocesses, no network;
## a few seconds). Nothing to install or start; `make test` runs them too, with everything else.
test-fast: venv
	$(BIN)/pytest tests/unit $(PYTEST_ARGS)

## ground-truth: the verdicts (replay, compat, the online detectors, diverge) judged against what
## really happens on generated apps and release changes (tests/apps/ground_truth); prints every case
## that fails and the matrix. GROUND_TRUTH_ARGS="--cases 1000 --seed 7" draws more or others.
## `make test` runs 300 cases (tests/integration/test_ground_truth.py).
.PHONY: ground-truth
GROUND_TRUTH_ARGS ?=
ground-truth: venv
	cd tests/apps && ../../$(BIN)/python -m ground_truth $(GROUND_TRUTH_ARGS)

## langgraph-suite: LangGraph's own tests (from the sdist of the installed langgraph) with every
## checkpointer fixture wrapped by instrument(), on memory, SQLite, PostgreSQL and Redis;
## fails on a test that passes bare and fails wrapped. LANGGRAPH_SUITE_ARGS="--bare all" runs
## the whole selection bare too (default: only the wrapped failures are re-run bare).
langgraph-suite: venv postgres-server tools $(SUITE_STAMP)
	$(BIN)/python scripts/langgraph_suite/run.py $(LANGGRAPH_SUITE_ARGS)

## langgraph-versions: the agent corpus, the packaged agents and the transparency tests on the
## oldest and the newest LangGraph the library supports, each in its own venv (.venv-lg-oldest
## pinned to pyproject.toml's lower bounds, .venv-lg-newest resolved to the newest releases;
## scripts/langgraph_versions/). LANGGRAPH_VERSIONS_ARGS="--env newest --refresh" picks one
## and re-resolves it.
.PHONY: langgraph-versions
LANGGRAPH_VERSIONS_ARGS ?=
langgraph-versions: venv postgres-server
	$(BIN)/python scripts/langgraph_versions/run.py $(LANGGRAPH_VERSIONS_ARGS)

$(SUITE_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,langgraph-suite]'
	@touch "$(SUITE_STAMP)"

## tools: external tools the tests need (scripts/tools/*.sh: Prometheus, npm packages, ...)
tools: venv
	@for script in scripts/tools/*.sh; do \
	  [ -e "$$script" ] || continue; \
	  echo "==> $$script"; bash "$$script"; \
	done

## lint: ruff check, ruff format --check, mypy --strict on src/ and the examples
lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy --strict src/ examples/refund_demo.py examples/refund_agent.py examples/agent.py

## demo: run the demo
demo: venv
	$(BIN)/python examples/refund_demo.py

## wheel: build the wheel users install into their own app (README, "Install into your app"):
## dist/langgraph_checkpoint_otel-<version>-py3-none-any.whl, built offline with .venv's hatchling
## (the previous one removed first). WHEEL_DIR=... writes it elsewhere.
.PHONY: wheel
WHEEL_DIR ?= dist
wheel: venv
	rm -f "$(WHEEL_DIR)"/langgraph_checkpoint_otel-*.whl
	$(BIN)/python -m build --wheel --no-isolation --outdir "$(WHEEL_DIR)" .
	@ls "$(WHEEL_DIR)"/langgraph_checkpoint_otel-*.whl

## bench: run the benchmarks (with the peer instrumentations of the `bench` extra; PostgreSQL
## server binaries for the PostgreSQL cell)
bench: venv postgres-server $(BENCH_STAMP)
	$(BIN)/python benchmarks/run.py

$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	@touch "$(BENCH_STAMP)"

## clean: remove the venv and all caches/build output
clean:
	rm -rf "$(VENV)" .venv-phoenix .venv-mlflow .venv-traceloop .venv-lg-oldest .venv-lg-newest \
	  .pytest_cache .mypy_cache .ruff_cache build dist .demo .bench .langgraph-suite .ground-truth
	find . -name '*.egg-info' -prune -exec rm -rf {} +
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
