"""The local stack manager: Kafka (KRaft), Redis, Flink and Triton as plain processes, no Docker.

Use `python -m jobs.localstack up|down|status`, or from Python:

    stack = Stack(StackSettings.from_env())
    stack.up()

Flink jobs go to the cluster with `jobs.localstack.flink_jobs.submit_python_job`.
"""

from jobs.localstack.errors import StackError
from jobs.localstack.service import Service, ServiceStatus
from jobs.localstack.settings import StackSettings
from jobs.localstack.stack import REGISTRY, Stack

__all__ = ["REGISTRY", "Service", "ServiceStatus", "Stack", "StackError", "StackSettings"]
