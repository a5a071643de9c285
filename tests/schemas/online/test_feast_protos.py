"""Reading Feast's format leaves metrics in memory and the environment as it was."""

from __future__ import annotations

import json
import os
import subprocess
import sys

CHECK = """
import json, os, sys
import inference.worker.worker  # reads Feast's format, then registers its metrics
import prometheus_client.values as values
print(json.dumps({
    "feast_imported": "feast.metrics" in sys.modules,
    "value_class": values.ValueClass.__name__,
    "prometheus_env": sorted(k for k in os.environ if k.startswith("PROMETHEUS_MULTIPROC")),
}))
"""


def test_importing_feast_leaves_prometheus_single_process_and_the_environment_alone() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROMETHEUS_MULTIPROC")}
    done = subprocess.run(
        [sys.executable, "-c", CHECK], env=env, capture_output=True, text=True, check=True
    )
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["feast_imported"]  # the side effect's trigger did run
    assert seen["value_class"] == "MutexValue"
    assert seen["prometheus_env"] == []
