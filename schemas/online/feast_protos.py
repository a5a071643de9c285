"""Feast's ``Value`` protobufs, loaded without importing the Feast SDK.

``Value_pb2`` needs nothing but protobuf, yet importing it by name runs
``feast/__init__``, which imports the whole SDK (feature store, every offline
store): 12 s of a 13 s worker start on an idle box, 45 s on a loaded one, all
of it paid again on every restart. It also imports ``feast.metrics``, which sets
``PROMETHEUS_MULTIPROCESS_DIR`` so that ``prometheus_client`` keeps every metric
in mmap files (2.5% of the worker's CPU at 300 requests/s). So the module is
loaded from its file, under its own name: a process that does import Feast
later (the writer's ``feast apply`` helpers) finds it already there.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

_NAME = "feast.protos.feast.types.Value_pb2"


def _value_module() -> ModuleType:
    if _NAME in sys.modules:
        return sys.modules[_NAME]
    feast = importlib.util.find_spec("feast")
    if feast is None or not feast.submodule_search_locations:
        raise ImportError("feast is not installed (pip install feast)")
    path = Path(feast.submodule_search_locations[0]) / "protos/feast/types/Value_pb2.py"
    spec = importlib.util.spec_from_file_location(_NAME, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[_NAME] = module
    spec.loader.exec_module(module)
    return module


_value = _value_module()
DoubleList = _value.DoubleList
Int64List = _value.Int64List
StringList = _value.StringList
ValueProto = _value.Value

__all__ = ["DoubleList", "Int64List", "StringList", "ValueProto"]
