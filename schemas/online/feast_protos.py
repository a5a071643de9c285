"""Feast's ``Value`` protobufs, imported without Feast's metrics side effect.

Importing any ``feast`` module runs ``feast/__init__``, which imports
``feast.metrics``: that sets ``PROMETHEUS_MULTIPROCESS_DIR`` (a fresh temporary
folder) in ``os.environ`` for gunicorn-style servers. ``prometheus_client``,
imported afterwards, then stores every metric of the importing process in mmap
files (2.5% of the worker's CPU at 300 requests/s), and every child process
started with a copy of the environment does the same. Choosing
``prometheus_client``'s value class first and restoring the environment keeps
this process and its children on plain in-memory metrics.
"""

from __future__ import annotations

import os

import prometheus_client.values  # noqa: F401  (fixes the in-process value class first)

_FEAST_SETS = ("PROMETHEUS_MULTIPROCESS_DIR", "PROMETHEUS_MULTIPROC_DIR")
_before = {name: os.environ.get(name) for name in _FEAST_SETS}

from feast.protos.feast.types.Value_pb2 import (  # noqa: E402
    DoubleList,
    Int64List,
    StringList,
)
from feast.protos.feast.types.Value_pb2 import Value as ValueProto  # noqa: E402

for _name, _value in _before.items():
    if _value is None:
        os.environ.pop(_name, None)

__all__ = ["DoubleList", "Int64List", "StringList", "ValueProto"]
