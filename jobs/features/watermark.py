"""The events view with its watermark kept across restores (the floor operator in ``udf/``).

Flink checkpoints no watermark: a job restored from a checkpoint starts with
none, so ``CURRENT_WATERMARK`` is NULL until the source emits again, and an
event that was late before the kill is accepted and re-fires a window that had
fired (the checkpoint holds no state for it any more). ``WatermarkFloor`` puts
a Java operator between the source and the views that stores the watermark in
the checkpoint and re-emits it first after a restore. SQL has no place for an
operator, so the source passes through the DataStream API for it, staying in
the JVM.
"""

from __future__ import annotations

from pyflink.java_gateway import get_gateway
from pyflink.table import StreamTableEnvironment, Table

from jobs.features.sql import EVENTS_VIEW, events_query


def register_events_view(env: StreamTableEnvironment) -> None:
    """Register :data:`EVENTS_VIEW` over the source table, through the watermark floor.

    The functions jar must be on ``pipeline.jars`` already: PyFlink adds those
    to the gateway's class loader, which is where the class is found.
    """
    events = env.sql_query(events_query())
    floor = get_gateway().jvm.io.streamrec.flink.WatermarkFloor
    j_table = floor.keep(env._j_tenv, events._j_table, "rowtime", "proctime")
    env.create_temporary_view(EVENTS_VIEW, Table(j_table, env))
