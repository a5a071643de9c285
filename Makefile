# The single front door. Every target sets up what it needs by itself.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-dev
# RECORD=1: append the target's RESULT line (with date, commit, cores, load) to
# docs/results.jsonl (tests/results.py); a run without a verdict is recorded too.
REC = $(if $(RECORD),$(PY) -m tests.results record --name $@ --)
# `make` alone lists the targets.
.DEFAULT_GOAL := help

.PHONY: help demo up down status observe train features features-cluster feature-writer \
	feast-apply worker drift drift-reference clean setup schemas docs browser test test-unit lint \
	fuzz faults flake-check chaos soak security-check canary-check repeat-checks repeat-checks-long drift-check bench-ingest \
	bench-features bench-features-ab profile-features bench-serving bench-cold-calls bench-e2e \
	bench-sla bench-scale bench-recall bench-redis-cluster capacity eval-online

##@ run: the product on this machine, the demo, the local stack and each role

demo: $(STAMP) ## the whole loop on real data: features, ranker on Triton, worker, drift verdict
	$(REPLICA)$(REC) $(PY) -m jobs.demo

# KAFKA_BROKERS=3: three replicated brokers (STREAMREC_KAFKA_BROKERS) instead of one.
# REDIS_CLUSTER=1: a Redis Cluster of three masters and three replicas (STREAMREC_REDIS_CLUSTER).
STACK_SHAPE = $(if $(KAFKA_BROKERS),STREAMREC_KAFKA_BROKERS=$(KAFKA_BROKERS) )$(if $(REDIS_CLUSTER),STREAMREC_REDIS_CLUSTER=$(REDIS_CLUSTER) )
# The worker's read replica of Redis (STREAMREC_REDIS_REPLICA_PORT, 0 = none), which the
# stack has beside one plain Redis only (not with REDIS_CLUSTER or the secured mode).
REPLICA = $(if $(REDIS_CLUSTER)$(STREAMREC_REDIS_CLUSTER)$(STREAMREC_STACK_SECURE),,STREAMREC_REDIS_REPLICA_PORT=$${STREAMREC_REDIS_REPLICA_PORT:-6380} )
up: $(STAMP) ## start the local stack (Kafka, Redis and its read replica, Flink, Triton); idempotent
	$(STACK_SHAPE)$(REPLICA)$(PY) -m jobs.localstack up

down: $(STAMP) ## stop the local stack, leaving no process behind
	$(PY) -m jobs.localstack down

status: $(STAMP) ## show what the local stack runs, whether it is healthy, and every metrics port
	$(STACK_SHAPE)$(REPLICA)$(PY) -m jobs.localstack status

observe: $(STAMP) ## start Prometheus beside the running stack (loopback :9090) and print where to look
	$(PY) -m jobs.localstack observe $(if $(PANELS),--panels $(PANELS))

train: $(STAMP) ## train the ranker (Taobao 9 days, last day held out), export ONNX variants, print metrics
	$(REC) $(PY) -m jobs.ranker
	@# The drift job compares live features with the reference saved beside the model.
	$(PY) -m jobs.drift reference --out "$${STREAMREC_MODEL_DIR:-.cache/ranker}/drift_reference.parquet"

features: $(STAMP) ## run the streaming feature job locally (mini-cluster) against the stack
	$(PY) -m jobs.features

features-cluster: $(STAMP) ## submit the feature job to the stack's Flink cluster (flink run)
	STREAMREC_FLINK_JOBMANAGER=$${STREAMREC_FLINK_JOBMANAGER:-127.0.0.1:$${STREAMREC_FLINK_REST_PORT:-8081}} \
	FLINK_CONF_DIR=$${FLINK_CONF_DIR:-$${STREAMREC_STACK_HOME:-.stack}/flink-jobmanager/conf} \
	$(PY) -m jobs.features.submit

feature-writer: $(STAMP) ## run the feature writer (changelog -> Feast online store)
	$(PY) -m jobs.feature_writer

feast-apply: $(STAMP) ## register the feature views (registry under .stack/feast)
	$(PY) -m jobs.feature_writer.feast_env apply

worker: $(STAMP) ## run the inference worker (requests -> features, recall, Triton -> recommendations)
	$(PY) -m inference.worker

drift: $(STAMP) ## run the drift watch (feature changelog + scores vs the model's reference, Evidently)
	$(PY) -m jobs.drift watch

drift-reference: $(STAMP) ## build the drift reference beside the model (from the replayed Taobao stream)
	$(PY) -m jobs.drift reference --out $${STREAMREC_MODEL_DIR:-.cache/ranker}/drift_reference.parquet

clean: down ## stop the stack and remove its data (downloads stay cached)
	rm -rf .stack

##@ develop: the environment and generated files

# `##@ group: what it holds` opens a group; `target: ... ## text` lists a target in it.
help: ## list the targets by group
	@awk 'BEGIN { FS = ":.*## " } \
		/^##@ / { at = index($$0, ": "); printf "\n%s (%s)\n", substr($$0, 5, at - 5), substr($$0, at + 2); next } \
		/^[a-z0-9-]+:.*## / { printf "  %-20s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,flink,writer,worker,triton,train,drift]'
	# One environment for every role; the grpcio pin is explained in pyproject.toml.
	$(PY) -m pip install -q 'grpcio==1.67.1'
	touch $@

setup: $(STAMP) ## create the virtual environment with the project and its dev tools

schemas: $(STAMP) ## regenerate schemas/json from the Python record types
	$(PY) -m schemas.export

# The two generated pages; tests/docs fails when a committed page is stale.
docs: $(STAMP) ## regenerate docs/configuration.md (from the settings) and docs/benchmarks.md (from docs/results.jsonl)
	$(PY) -m tests.docs.configuration > docs/configuration.md
	$(PY) -m tests.docs.benchmarks > docs/benchmarks.md

# The drift report's render test opens it in headless Chromium (Debian's package).
browser: ## install Debian's chromium for the report render test (root, when missing)
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && \
		(apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium) \
		|| echo "chromium missing and not root: install it (apt-get install chromium) or the render test fails"; }

##@ check: tests and guarantee checks; those ending with RESULT take RECORD=1

# make test fuzzes the codecs with the first 2,500 derandomized inputs of each kind;
# make fuzz runs all 10,000 (and the poison streams through the running parts).
TEST_FUZZ_EXAMPLES ?= 2500
test: $(STAMP) browser ## the whole suite: lint, unit tests and integration tests on the real stack
	$(MAKE) lint
	STREAMREC_FUZZ_EXAMPLES=$(TEST_FUZZ_EXAMPLES) $(PY) -m pytest

test-unit: $(STAMP) ## unit tests only (no services)
	$(PY) -m pytest -m "not integration"

lint: $(STAMP) ## ruff and mypy
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy schemas runtime jobs inference tests

FUZZ_INPUTS ?= 10000
fuzz: $(STAMP) ## poison fuzzing: codec, Java parser parity, and FUZZ_INPUTS inputs through the running worker and feature job
	STREAMREC_FUZZ_EXAMPLES=10000 STREAMREC_FUZZ_INTEGRATION_INPUTS=$(FUZZ_INPUTS) $(PY) -m pytest -q tests/schemas/test_codec_fuzz.py \
		tests/jobs/features/test_parser_parity.py tests/inference/worker/test_poison_integration.py \
		tests/jobs/features/test_poison_integration.py

faults: $(STAMP) ## the runs too long for make test (marked long): broker restarts, Flink restore, cluster vs local
	$(PY) -m pytest -m long

flake-check: $(STAMP) ## make test RUNS times (default 5) under load from bench-ingest; one line per run
	RUNS=$${RUNS:-5} tests/support/flake_runs.sh

chaos: $(STAMP) ## the fault suite end to end under load (CHAOS_ARGS for flags; --help); ends with RESULT
	$(REC) $(PY) -m tests.chaos $(CHAOS_ARGS)

MINUTES ?= 30
soak: $(STAMP) ## the whole pipeline MINUTES long with kills, memory sampled every 30 s; ends with RESULT
	$(REC) $(PY) -m tests.chaos.soak --minutes $(MINUTES) $(SOAK_ARGS)

SECURITY_EVENTS ?= 2000
security-check: $(STAMP) ## the secured stack end to end, then every way in that must fail (SECURITY.md); ends with RESULT
	$(REC) $(PY) -m tests.security --events $(SECURITY_EVENTS)

canary-check: $(STAMP) ## a 50/50 split, a good and a bad canary under a request stream, MLflow as registry; ends with RESULT
	$(REC) $(PY) -m tests.canary.check $(CANARY_ARGS)

# N runs of each check on a fresh stack, every RESULT line recorded (tests/repeat_checks.py);
# CHECKS: the make targets (default the short checks); the long ones have their own target.
N ?= 5
CHECKS ?= canary-check security-check drift-check bench-sla demo
repeat-checks: $(STAMP) ## each guarantee check N times (default 5), all recorded; pass-rate table, RESULT
	$(PY) -m tests.repeat_checks --runs $(N) --checks "$(CHECKS)"

repeat-checks-long: $(STAMP) ## chaos (default schedule) and a 10-minute soak, N times each; RESULT
	$(PY) -m tests.repeat_checks --runs $(N) --checks "chaos soak" --soak-minutes 10

drift-check: $(STAMP) ## drift watch over the stream unchanged, then shifted: alerts only for the shifted features
	$(REC) $(PY) -m tests.benchmarks.drift

##@ benchmark: figures, each ending with a RESULT line that RECORD=1 appends to docs/results.jsonl

bench-ingest: $(STAMP) ## replay-path produce/consume throughput against raw confluent-kafka
	$(REC) $(PY) -m tests.benchmarks.ingest

bench-features: $(STAMP) ## feature-job events/s (SQL vs Python DataStream) and freshness
	$(REC) $(PY) -m tests.benchmarks.features

bench-features-ab: $(STAMP) ## the Java functions of two revisions side by side (REVS="before=HEAD~1 after=.")
	$(REC) $(PY) -m tests.benchmarks.features_ab $(REVS)

profile-features: $(STAMP) ## where the feature job's CPU goes, per operator chain and JVM thread (PROFILE_ARGS: --help)
	$(PY) -m tests.benchmarks.profile_features $(PROFILE_ARGS)

bench-serving: $(STAMP) ## ranker served by Triton (gRPC) vs ONNX Runtime in process
	$(REC) $(PY) -m tests.benchmarks.serving

bench-cold-calls: $(STAMP) ## one ranker call back to back vs after idle gaps: what a pause costs on this box
	$(REC) $(PY) -m tests.benchmarks.cold_calls

bench-e2e: $(STAMP) ## request->recommendation latency/throughput: worker vs naive vs in-process ceiling
	$(REC) $(PY) -m tests.benchmarks.e2e

bench-sla: $(STAMP) ## highest rate with p99 <= 50 ms and errors < 0.1% (Poisson, open loop), per variant
	$(REC) $(PY) -m tests.benchmarks.sla

bench-scale: $(STAMP) ## worker throughput for 1, 2 and 4 workers in one group on 8 partitions, scaling efficiency
	$(REC) $(PY) -m tests.benchmarks.scale $(SCALE_ARGS)

bench-recall: $(STAMP) ## the embedding route's Faiss index at 100k/1M/4M items: recall@100 vs exact, ms per batch
	$(REC) $(PY) -m tests.benchmarks.recall $(RECALL_ARGS)

bench-redis-cluster: $(STAMP) ## one Redis vs a Redis Cluster side by side: writer rows/s, Redis CPU per row, read p99
	$(REC) $(PY) -m tests.benchmarks.redis_cluster $(REDIS_CLUSTER_ARGS)

capacity: $(STAMP) ## machines and cost for 1k/10k/100k requests/s from the benchmarks' RESULT lines (CAPACITY_ARGS: --help)
	$(PY) -m tests.benchmarks.capacity $(CAPACITY_ARGS)

# DATASET=movielens (or FILE=a MovieLens-format folder); EVAL_ARGS for more flags.
eval-online: $(STAMP) ## replay a real period through the loop; hit@10 per variant (stream, batch, ...)
	$(if $(RECORD),$(PY) -m tests.results record --name $@ --args "$(if $(DATASET),DATASET=$(DATASET)) $(if $(FILE),FILE=$(FILE))" --) $(PY) -m jobs.evaluate --dataset $${DATASET:-taobao-9days} $${FILE:+--file $$FILE} $(EVAL_ARGS)
