"""What importing Feast leaves in the environment, and an environment without it.

``import feast`` runs ``feast.metrics``, which points ``PROMETHEUS_MULTIPROCESS_DIR``
and ``PROMETHEUS_MULTIPROC_DIR`` at a temporary directory of its own when they are
unset. Every process started from one that imported Feast inherits them, and its
``prometheus_client`` then keeps each metric in mmap files and checks its pid on
every observation. A worker started by the demo or a benchmark paid that on the
request path, where one started alone does not: the parts are started without
Feast's directory. A directory the user set is kept (Feast leaves it alone too).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePath

# tempfile.mkdtemp(prefix=...) in feast/metrics.py.
FEAST_METRICS_PREFIX = "feast_metrics_"
MULTIPROCESS_VARIABLES = frozenset({"PROMETHEUS_MULTIPROCESS_DIR", "PROMETHEUS_MULTIPROC_DIR"})


def set_by_feast(name: str, value: str) -> bool:
    """Whether ``name=value`` is Feast's own metrics directory (pure)."""
    return name in MULTIPROCESS_VARIABLES and PurePath(value).name.startswith(FEAST_METRICS_PREFIX)


def without_feast_metrics(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` less the variables that only Feast's import set (pure)."""
    return {name: value for name, value in env.items() if not set_by_feast(name, value)}
