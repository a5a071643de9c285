"""A feature added in one place reaches the SQL sink, the Feast view, the writer and the reader.

A temporary copy of the code gets one throwaway pass-through feature: a single
annotated field on the item-window changelog row (the edit docs/pipeline.md's worked
example shows). Run from that copy, the feature job's sink columns, the Feast
``item_trends`` view, the writer's row and a read back from Redis (through this
project's reader and through Feast's ``get_online_features`` after ``feast
apply``) all carry it. The unmodified copy, probed the same way (without
Feast, to save a ``feast apply``), carries none of it, so the probe can tell the
two apart.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO_ROOT, Endpoints
from tests.support import requirements

pytestmark = pytest.mark.integration

FIELD_ANCHOR = "    buy: Annotated[Count, stored()]\n\n\nclass CategoryWindow"
ADDED = "    buy: Annotated[Count, stored()]\n    sessions: Annotated[Count, stored()] = 0\n"

PROBE = r"""
import importlib.util, json, os, uuid
from pathlib import Path

import redis

from jobs.feature_writer.feast_env import feast_apply, load_store
from jobs.feature_writer.rows import ConversionOptions, to_row
from jobs.features.sql import sink_columns
from schemas.features import ItemWindow
from runtime.online.redis_store import OnlineStoreWriter, read_rows
from runtime.online.connect import connect

root = Path.cwd()
extra = {"sessions": 7} if "sessions" in ItemWindow.__struct_fields__ else {}
update = ItemWindow(
    item_id=424242, category_id=9, window_start=1_700_000_000_000,
    window_end=1_700_001_800_000, pv=3, cart=1, fav=0, buy=1, **extra,
)
spec = importlib.util.spec_from_file_location("definitions", root / "feature_repo/definitions.py")
definitions = importlib.util.module_from_spec(spec)
spec.loader.exec_module(definitions)
feast_fields = [f.name for f in definitions.item_trends.features]

project = "streamrec_add" + uuid.uuid4().hex[:8]
yaml_path = root / "feature_repo/feature_store.yaml"
yaml_path.write_text(yaml_path.read_text().replace("project: streamrec", f"project: {project}"))
client = connect(os.environ["STREAMREC_REDIS_URL"])
row = to_row(update, ConversionOptions())
OnlineStoreWriter(client, project).write([row])
ours = read_rows(client, "item_trends", [update.item_id], project=project)[0]

feast = {name: [None] for name in feast_fields}
if os.environ["PROBE_FEAST"] == "1":
    env = dict(os.environ)
    applied = feast_apply(root / "feature_repo", env)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    store = load_store(root / "feature_repo", env)
    feast = store.get_online_features(
        features=[f"item_trends:{name}" for name in feast_fields],
        entity_rows=[{"item_id": update.item_id}],
    ).to_dict()
print(json.dumps({
    "sql": sink_columns(ItemWindow),
    "feast_fields": feast_fields,
    "writer": row.decoded(),
    "reader": ours,
    "feast": {name: feast[name][0] for name in feast_fields},
}))
"""


def copy_tree(dest: Path) -> Path:
    for package in ("schemas", "runtime", "jobs", "feature_repo"):
        shutil.copytree(
            REPO_ROOT / package,
            dest / package,
            ignore=shutil.ignore_patterns("__pycache__", "target", "data", "*.db"),
        )
    return dest


def probe(tree: Path, stack: Endpoints, through_feast: bool = True) -> dict[str, Any]:
    env = {
        **os.environ,
        # The copy shadows the installed project (an editable install's finder comes last).
        "PYTHONPATH": str(tree),
        "STREAMREC_REDIS_URL": stack.redis_url,
        "STREAMREC_FEAST_REGISTRY": str(tree / "registry.db"),
        "PROBE_FEAST": "1" if through_feast else "0",
    }
    env.pop("STREAMREC_FEAST_REDIS", None)
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_one_annotated_field_reaches_every_stage(stack: Endpoints, tmp_path: Path) -> None:
    requirements.redis_url(stack.redis_url)
    changed = copy_tree(tmp_path / "changed")
    features = changed / "schemas" / "features.py"
    text = features.read_text()
    assert FIELD_ANCHOR in text, "ItemWindow's last field moved; update the anchor"
    features.write_text(text.replace(FIELD_ANCHOR, FIELD_ANCHOR.replace(ADDED[:36], ADDED, 1)))

    got = probe(changed, stack)
    assert got["sql"].endswith("buy BIGINT, sessions BIGINT")
    assert "sessions" in got["feast_fields"]
    assert got["writer"]["sessions"] == 7
    assert got["reader"]["sessions"] == 7
    assert got["feast"]["sessions"] == 7
    assert got["feast"]["pv"] == 3

    unchanged = probe(copy_tree(tmp_path / "unchanged"), stack, through_feast=False)
    assert "sessions" not in unchanged["sql"]
    assert "sessions" not in unchanged["feast_fields"]
    assert "sessions" not in unchanged["writer"]
    assert "sessions" not in unchanged["reader"]
