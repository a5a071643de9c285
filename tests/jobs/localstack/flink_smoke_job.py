"""A tiny pure-SQL PyFlink job for the cluster test: bounded datagen rows -> a Kafka topic.

Run by `flink run -pym flink_smoke_job` on the stack's cluster. It writes through
the Kafka SQL connector, so the test also proves that a jar given in
`pipeline.jars` reaches the TaskManager.
"""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path


def build_sql(topic: str, bootstrap: str, rows: int) -> list[str]:
    source = f"""
        CREATE TEMPORARY TABLE numbers (n BIGINT) WITH (
            'connector' = 'datagen',
            'number-of-rows' = '{rows}',
            'fields.n.kind' = 'sequence',
            'fields.n.start' = '1',
            'fields.n.end' = '{rows}'
        )"""
    sink = f"""
        CREATE TEMPORARY TABLE out_topic (n BIGINT, doubled BIGINT) WITH (
            'connector' = 'kafka',
            'topic' = '{topic}',
            'properties.bootstrap.servers' = '{bootstrap}',
            'format' = 'json'
        )"""
    return [source, sink, "INSERT INTO out_topic SELECT n, n * 2 FROM numbers"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--topic", required=True)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--rows", type=int, default=100)
    parser.add_argument("--jar", type=Path, required=True)
    args = parser.parse_args(argv)
    # Imported by name: pyflink ships no type information, and this keeps mypy
    # --strict quiet without an ignore that a project-wide override would make stale.
    table = importlib.import_module("pyflink.table")
    env = table.TableEnvironment.create(table.EnvironmentSettings.in_streaming_mode())
    env.get_config().set("pipeline.jars", args.jar.resolve().as_uri())
    env.get_config().set("pipeline.name", f"localstack-smoke-{args.topic}")
    *ddl, insert = build_sql(args.topic, args.bootstrap, args.rows)
    for statement in ddl:
        env.execute_sql(statement)
    # Detached submission: execute_sql returns once the cluster has the job.
    env.execute_sql(insert)


if __name__ == "__main__":
    main()
