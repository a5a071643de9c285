"""What the suite needs from the machine, failing loudly with what to do when it is missing.

``make test`` must not turn green by skipping: a missing dataset, browser or
Redis is a failure that says where to put the data or what to install. The only
allowed skip is a GPU check (see ``ALLOWED_SKIP`` in tests/conftest.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from jobs.datasets import default_path

DATA_HINT = (
    "the shared datasets are read from ../shared/data next to the checkout, or from "
    "$STREAMREC_DATA_DIR (folders taobao/ and movielens-latest-small/; see README, Data)"
)


def dataset(name: str) -> Path:
    """The file of a shared dataset; a failure naming the path and the fix if it is absent."""
    path = default_path(name)
    if not path.exists():
        pytest.fail(f"dataset {name!r} not found at {path}: {DATA_HINT}", pytrace=False)
    return path


def chromium() -> str:
    """Debian's chromium, which ``make test`` installs (``make browser``)."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    pytest.fail(
        "chromium not found: run `make browser` as root (apt-get install chromium)",
        pytrace=False,
    )


def redis_url(url: str) -> str:
    """The test stack's Redis; an external Kafka needs STREAMREC_TEST_REDIS_URL beside it."""
    if not url:
        pytest.fail(
            "no Redis for the tests: with STREAMREC_TEST_KAFKA_BOOTSTRAP_SERVERS set, "
            "set STREAMREC_TEST_REDIS_URL too",
            pytrace=False,
        )
    return url
