# The project's Python processes: inference worker, feature writer, drift job, outcome job,
# replay.
# One image, several commands (compose and the Kubernetes manifests pick the command).
# Build from the repository root:  docker build -f docker/app.Dockerfile -t streamrec-app .
FROM python:3.11-slim-bookworm

# libgomp1: faiss-cpu's OpenMP runtime.
RUN apt-get update \
    && apt-get install -y --no-install-recommends libgomp1 \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/streamrec
COPY pyproject.toml README.md ./
COPY schemas ./schemas
COPY runtime ./runtime
COPY jobs ./jobs
COPY inference ./inference
COPY feature_repo ./feature_repo

# The worker, feature-writer, drift and outcome roles; training and Flink have images of
# their own.
ARG EXTRAS=worker,writer,drift,outcome
RUN pip install --no-cache-dir ".[${EXTRAS}]"

# Unprivileged at run time; reports and artifacts come in as volumes.
RUN useradd --create-home --uid 10001 streamrec && mkdir -p /reports /artifacts \
    && chown streamrec /reports
USER streamrec
ENV PYTHONUNBUFFERED=1
# Worker metrics 9108, drift job metrics 9109, outcome job metrics 9111; they bind loopback
# unless STREAMREC_WORKER_METRICS_HOST / STREAMREC_DRIFT_METRICS_HOST /
# STREAMREC_OUTCOME_METRICS_HOST say 0.0.0.0 (compose, k8s).
EXPOSE 9108 9109 9111
CMD ["python", "-m", "inference.worker", "--help"]
