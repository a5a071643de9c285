"""The local stack manager: Kafka (KRaft) and Redis as plain processes, no Docker.

Use `python -m jobs.localstack up|down|status`, or from Python:

    stack = Stack(StackSettings.from_env())
    stack.up()
"""

from jobs.localstack.errors import StackError
from jobs.localstack.service import Service, ServiceStatus
from jobs.localstack.settings import StackSettings
from jobs.localstack.stack import REGISTRY, Stack

__all__ = ["REGISTRY", "Service", "ServiceStatus", "Stack", "StackError", "StackSettings"]
