"""Building and running the feature job on a PyFlink TableEnvironment (the I/O shell)."""

from __future__ import annotations

from typing import Any

from pyflink.table import EnvironmentSettings, TableEnvironment

from jobs.features.settings import FeatureJobSettings
from jobs.features.sql import statements


def flink_config(settings: FeatureJobSettings) -> dict[str, str]:
    config = {
        "table.local-time-zone": "UTC",
        "parallelism.default": str(settings.parallelism),
        "pipeline.name": "streamrec-features",
        # Operators hand records on without copying; the SQL operators allow it.
        "pipeline.object-reuse": "true",
        # A half-full network buffer waits at most this long: the fresh view's
        # latency, paid at every exchange between operators (default 100 ms).
        "execution.buffer-timeout.interval": f"{settings.buffer_timeout_ms} ms",
        "pipeline.jars": ";".join(path.resolve().as_uri() for path in settings.connector_jars),
    }
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
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    config = env.get_config()
    for key, value in flink_config(settings).items():
        config.set(key, value)
    if restore_from:
        config.set("execution.state-recovery.path", restore_from)
    ddl, inserts = statements(settings)
    for statement in ddl:
        env.execute_sql(statement)
    statement_set = env.create_statement_set()
    for insert in inserts:
        statement_set.add_insert_sql(insert)
    return statement_set
