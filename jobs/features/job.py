"""Building and running the feature job on a PyFlink TableEnvironment (the I/O shell)."""

from __future__ import annotations

import os
from typing import Any

from pyflink.datastream import StreamExecutionEnvironment
from pyflink.table import EnvironmentSettings, StreamTableEnvironment

from jobs.features.keyed import register_keyed_views
from jobs.features.metrics import reporter_config
from jobs.features.settings import FeatureJobSettings
from jobs.features.sql import insert_statements, source_statements, view_statements
from jobs.features.watermark import register_events_view

# Where the local mini-cluster's own servers listen (blob, shuffle, RPC, REST): Flink
# binds them to every interface by default, which would put a job started on a laptop
# on its network. Job-level settings, so a job submitted to a cluster changes nothing.
LOOPBACK_BINDS = {
    "jobmanager.bind-host": "127.0.0.1",
    "taskmanager.bind-host": "127.0.0.1",
    "taskmanager.host": "127.0.0.1",
    "rest.bind-address": "127.0.0.1",
}
# PyFlink starts a gRPC pool for Python UDF workers on every local run, bound to `[::]`
# (hard-coded); this job's functions are all Java, so it is not started at all.
PYTHON_WORKER_MODE = ("_python_worker_execution_mode", "process")
# glibc gives a multi-threaded process up to 8 malloc arenas per core and rarely hands
# their free pages back: the JVM's native memory (network buffers, compiler threads)
# creeps up for an hour. Two arenas is the usual remedy for long-running JVMs (make soak
# measures it); read by the JVM PyFlink starts, which inherits this environment.
MALLOC_ARENAS = ("MALLOC_ARENA_MAX", "2")


# The collector of the local JVM (FeatureJobSettings.jvm_gc). With the state on the heap,
# G1's write barriers and remembered-set refinement took a quarter of the job's CPU on
# two cores (make bench-features); the throughput collector has neither.
GC_FLAGS = {"parallel": "-XX:+UseParallelGC", "g1": "-XX:+UseG1GC"}


def jvm_args(settings: FeatureJobSettings, given: str) -> str:
    """PyFlink's ``JVM_ARGS`` for the local JVM: the heap and collector, then what was ``given``.

    The heap is committed at start (``-Xms`` equal to ``-Xmx``), as Flink's own
    TaskManager launcher sizes it, so the state's growth stays inside a fixed
    reservation instead of stepping the process's memory up. Read when the first
    environment starts the JVM; a heap flag the user gave in ``JVM_ARGS`` comes
    last and wins.
    """
    heap = settings.jvm_heap_mb
    return f"-Xms{heap}m -Xmx{heap}m {GC_FLAGS[settings.jvm_gc]} {given}".strip()


def flink_config(settings: FeatureJobSettings) -> dict[str, str]:
    # The reporter's jars too: the mini-cluster finds reporter factories only through
    # the class loader PyFlink builds from pipeline.jars (jobs/features/metrics.py).
    jars = (*settings.connector_jars, *settings.metrics_jars)
    config = {
        **LOOPBACK_BINDS,
        "table.local-time-zone": "UTC",
        "parallelism.default": str(settings.parallelism),
        "pipeline.name": "streamrec-features",
        # Operators hand records on without copying; the SQL operators allow it.
        "pipeline.object-reuse": "true",
        "pipeline.auto-watermark-interval": f"{settings.watermark_interval_ms} ms",
        # A half-full network buffer waits at most this long: the fresh view's
        # latency, paid at every exchange between operators (default 100 ms).
        "execution.buffer-timeout.interval": f"{settings.buffer_timeout_ms} ms",
        "pipeline.jars": ";".join(path.resolve().as_uri() for path in jars),
    }
    if settings.metrics_port:
        # Read when the local mini-cluster starts; a cluster keeps its own reporter.
        config |= reporter_config(settings.metrics_host, settings.metrics_port)
    if settings.state_ttl_ms:
        # Bounds the SQL fresh view's per-user state (the keyed one expires users by its
        # own timers: Flink's TTL cleanup was half of its CPU); window aggregates ignore it.
        config["table.exec.state.ttl"] = f"{settings.state_ttl_ms} ms"
    if settings.checkpoint_dir is not None:
        config |= {
            "execution.checkpointing.interval": f"{settings.checkpoint_interval_ms} ms",
            "execution.checkpointing.dir": settings.checkpoint_dir.resolve().as_uri(),
            # Kept after a kill or cancel, so the job can be restored from it.
            "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
            "execution.checkpointing.num-retained": "3",
        }
    return config


def build(settings: FeatureJobSettings, restore_from: str | None = None) -> Any:
    """A TableEnvironment with every table and view registered and the inserts in one set."""
    os.environ.setdefault(*PYTHON_WORKER_MODE)
    os.environ.setdefault(*MALLOC_ARENAS)
    os.environ["JVM_ARGS"] = jvm_args(settings, os.environ.get("JVM_ARGS", ""))
    stream_env = StreamExecutionEnvironment.get_execution_environment()
    env = StreamTableEnvironment.create(stream_env, EnvironmentSettings.in_streaming_mode())
    config = env.get_config()
    for key, value in flink_config(settings).items():
        config.set(key, value)
    if restore_from:
        config.set("execution.state-recovery.path", restore_from)
    for statement in source_statements(settings):
        env.execute_sql(statement)
    register_events_view(env)
    for statement in view_statements(settings):
        env.execute_sql(statement)
    if settings.window_mode != "sql":
        register_keyed_views(env, settings)
    statement_set = env.create_statement_set()
    for insert in insert_statements(settings):
        statement_set.add_insert_sql(insert)
    return statement_set
