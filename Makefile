# The single front door. Every target sets up what it needs by itself.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-dev
# RECORD=1: append the target's RESULT line (with date, commit, cores, load) to
# docs/results.jsonl (tests/results.py); a run without a verdict is recorded too.
REC = $(if $(RECORD),$(PY) -m tests.results record --name $@ --)

.PHONY: browser help setup up down status observe test test-unit fuzz faults chaos soak security-check canary-check flake-check lint demo bench-ingest bench-features bench-redis-cluster \
	features features-cluster feature-writer feast-apply schemas clean \
	bench-recall capacity bench-scale bench-serving train worker bench-e2e bench-sla eval-online profile-features bench-features-ab bench-cold-calls

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,flink,writer,worker,triton,train,drift]'
	# One environment for every role; the grpcio pin is explained in pyproject.toml.
	$(PY) -m pip install -q 'grpcio==1.67.1'
	touch $@

setup: $(STAMP) ## create the virtual environment with the project and its dev tools

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

lint: $(STAMP) ## ruff and mypy
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy schemas jobs inference tests

# make test fuzzes the codecs with the first 2,500 derandomized inputs of each kind;
# make fuzz runs all 10,000 (and the poison streams through the running parts).
TEST_FUZZ_EXAMPLES ?= 2500
test: $(STAMP) browser ## the whole suite: lint, unit tests and integration tests on the real stack
	$(MAKE) lint
	STREAMREC_FUZZ_EXAMPLES=$(TEST_FUZZ_EXAMPLES) $(PY) -m pytest

# The drift report's render test opens it in headless Chromium (Debian's package).
browser: ## install Debian's chromium for the report render test (root, when missing)
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && \
		(apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium) \
		|| echo "chromium missing and not root: install it (apt-get install chromium) or the render test fails"; }

flake-check: $(STAMP) ## make test RUNS times (default 5) under load from bench-ingest; one line per run
	RUNS=$${RUNS:-5} tests/support/flake_runs.sh

FUZZ_INPUTS ?= 10000
fuzz: $(STAMP) ## poison fuzzing: codec, Java parser parity, and FUZZ_INPUTS inputs through the running worker and feature job
	STREAMREC_FUZZ_EXAMPLES=10000 STREAMREC_FUZZ_INTEGRATION_INPUTS=$(FUZZ_INPUTS) $(PY) -m pytest -q tests/schemas/test_codec_fuzz.py \
		tests/jobs/features/test_parser_parity.py tests/inference/worker/test_poison_integration.py \
		tests/jobs/features/test_poison_integration.py

faults: $(STAMP) ## the runs too long for make test (marked long): broker restarts, Flink restore, cluster vs local
	$(PY) -m pytest -m long

chaos: $(STAMP) ## the fault suite end to end under load (CHAOS_ARGS for flags; --help); ends with RESULT
	$(REC) $(PY) -m tests.chaos $(CHAOS_ARGS)

SECURITY_EVENTS ?= 2000
security-check: $(STAMP) ## the secured stack end to end, then every way in that must fail (SECURITY.md); ends with RESULT
	$(REC) $(PY) -m tests.security --events $(SECURITY_EVENTS)

canary-check: $(STAMP) ## a 50/50 split, a good and a bad canary under a request stream, MLflow as registry; ends with RESULT
	$(REC) $(PY) -m tests.canary.check $(CANARY_ARGS)

MINUTES ?= 30
soak: $(STAMP) ## the whole pipeline MINUTES long with kills, memory sampled every 30 s; ends with RESULT
	$(REC) $(PY) -m tests.chaos.soak --minutes $(MINUTES) $(SOAK_ARGS)

test-unit: $(STAMP) ## unit tests only (no services)
	$(PY) -m pytest -m "not integration"

schemas: $(STAMP) ## regenerate schemas/json from the Python record types
	$(PY) -m schemas.export

demo: $(STAMP) ## the whole loop on real data: features, ranker on Triton, worker, drift verdict
	$(REPLICA)$(REC) $(PY) -m jobs.demo

# DATASET=movielens (or FILE=a MovieLens-format folder); EVAL_ARGS for more flags.
eval-online: $(STAMP) ## replay a real period through the loop; hit@10 per variant (stream, batch, ...)
	$(REC) $(PY) -m jobs.evaluate --dataset $${DATASET:-taobao-9days} $${FILE:+--file $$FILE} $(EVAL_ARGS)

bench-ingest: $(STAMP) ## replay-path produce/consume throughput against raw confluent-kafka
	$(REC) $(PY) -m tests.benchmarks.ingest

bench-features: $(STAMP) ## feature-job events/s (SQL vs Python DataStream) and freshness
	$(REC) $(PY) -m tests.benchmarks.features

bench-features-ab: $(STAMP) ## the Java functions of two revisions side by side (REVS="before=HEAD~1 after=.")
	$(REC) $(PY) -m tests.benchmarks.features_ab $(REVS)

profile-features: $(STAMP) ## where the feature job's CPU goes, per operator chain and JVM thread (PROFILE_ARGS: --help)
	$(PY) -m tests.benchmarks.profile_features $(PROFILE_ARGS)

bench-recall: $(STAMP) ## the embedding route's Faiss index at 100k/1M/4M items: recall@100 vs exact, ms per batch
	$(REC) $(PY) -m tests.benchmarks.recall $(RECALL_ARGS)

capacity: $(STAMP) ## machines and cost for 1k/10k/100k requests/s from the benchmarks' RESULT lines (CAPACITY_ARGS: --help)
	$(PY) -m tests.benchmarks.capacity $(CAPACITY_ARGS)

bench-serving: $(STAMP) ## ranker served by Triton (gRPC) vs ONNX Runtime in process
	$(REC) $(PY) -m tests.benchmarks.serving

worker: $(STAMP) ## run the inference worker (requests -> features, recall, Triton -> recommendations)
	$(PY) -m inference.worker

bench-cold-calls: $(STAMP) ## one ranker call back to back vs after idle gaps: what a pause costs on this box
	$(REC) $(PY) -m tests.benchmarks.cold_calls

bench-e2e: $(STAMP) ## request->recommendation latency/throughput: worker vs naive vs in-process ceiling
	$(REC) $(PY) -m tests.benchmarks.e2e

bench-redis-cluster: $(STAMP) ## one Redis vs a Redis Cluster side by side: writer rows/s, Redis CPU per row, read p99
	$(REC) $(PY) -m tests.benchmarks.redis_cluster $(REDIS_CLUSTER_ARGS)

bench-scale: $(STAMP) ## worker throughput for 1, 2 and 4 workers in one group on 8 partitions, scaling efficiency
	$(REC) $(PY) -m tests.benchmarks.scale $(SCALE_ARGS)

bench-sla: $(STAMP) ## highest rate with p99 <= 50 ms and errors < 0.1% (Poisson, open loop), per variant
	$(REC) $(PY) -m tests.benchmarks.sla

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

.PHONY: drift drift-reference drift-check
drift: $(STAMP) ## run the drift watch (feature changelog + scores vs the model's reference, Evidently)
	$(PY) -m jobs.drift watch

drift-reference: $(STAMP) ## build the drift reference beside the model (from the replayed Taobao stream)
	$(PY) -m jobs.drift reference --out $${STREAMREC_MODEL_DIR:-.cache/ranker}/drift_reference.parquet

drift-check: $(STAMP) ## drift watch over the stream unchanged, then shifted: alerts only for the shifted features
	$(REC) $(PY) -m tests.benchmarks.drift

clean: down ## stop the stack and remove its data (downloads stay cached)
	rm -rf .stack
