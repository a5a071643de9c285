"""Reading Feast's format needs only its protobufs: no SDK import, metrics left in memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys

CHECK = """
import json, os, sys, time
started = time.perf_counter()
import inference.worker.worker  # reads Feast's format, then registers its metrics
took = time.perf_counter() - started
import prometheus_client.values as values
import schemas.online.feast_protos as protos
seen = {
    "sdk_imported": "feast.feature_store" in sys.modules or "feast.metrics" in sys.modules,
    "value_class": values.ValueClass.__name__,
    "prometheus_env": sorted(k for k in os.environ if k.startswith("PROMETHEUS_MULTIPROC")),
    "import_s": took,
}
from feast.protos.feast.types.Value_pb2 import Value  # the SDK's own import, later
seen["same_class"] = Value is protos.ValueProto
print(json.dumps(seen))
"""


def test_the_worker_reads_feast_values_without_importing_the_feast_sdk() -> None:
    """Importing the SDK took 12 of the worker's 13 s start (45 s on a loaded box, paid
    on every restart) and switched prometheus_client to mmap files."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROMETHEUS_MULTIPROC")}
    done = subprocess.run(
        [sys.executable, "-c", CHECK], env=env, capture_output=True, text=True, check=True
    )
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert not seen["sdk_imported"]
    assert seen["value_class"] == "MutexValue"
    assert seen["prometheus_env"] == []
    assert seen["same_class"]  # a later SDK import reuses the loaded module
