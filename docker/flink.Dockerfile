# Flink JobManager / TaskManager running the PyFlink feature job, and its submitter.
# Same recipe as the local stack: the Flink distribution inside the apache-flink wheel,
# on Python 3.11 and Java 17, so cluster, client and job use one interpreter.
# Build from the repository root:  docker build -f docker/flink.Dockerfile -t streamrec-flink .

# Java parts: the feature job's functions jar and the Kafka SQL connector.
FROM maven:3.9-eclipse-temurin-17 AS jars
WORKDIR /build
COPY jobs/features/udf ./udf
RUN mvn -q -B -f udf/pom.xml package -Dbuild.dir=/build/out
COPY docker/flink/connectors-pom.xml ./connectors-pom.xml
RUN mvn -q -B -f connectors-pom.xml dependency:copy-dependencies \
        -DexcludeTransitive=true -DoutputDirectory=/build/out

FROM python:3.11-slim-bookworm
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/streamrec
COPY pyproject.toml README.md ./
COPY schemas ./schemas
COPY runtime ./runtime
COPY jobs ./jobs
COPY inference ./inference
RUN pip install --no-cache-dir ".[flink]" 'grpcio==1.67.1'
COPY --from=jars /build/out/*.jar /opt/streamrec/jars/

ENV FLINK_HOME=/usr/local/lib/python3.11/site-packages/pyflink \
    FLINK_CONF_DIR=/opt/streamrec/flink-conf \
    PYTHONUNBUFFERED=1
ENV PATH="${FLINK_HOME}/bin:${PATH}"
# config.yaml comes from docker/flink/config.yaml (mounted by compose, a ConfigMap in k8s).
COPY docker/flink/config.yaml /opt/streamrec/flink-conf/config.yaml
# The start scripts look for their log4j files beside config.yaml.
RUN cp ${FLINK_HOME}/conf/log4j*.properties /opt/streamrec/flink-conf/
# REST/web UI 8081, RPC 6123, blob 6124, Prometheus reporter 9249.
EXPOSE 8081 6123 6124 9249
CMD ["jobmanager.sh", "start-foreground"]
