"""The network module travels without the project: torch-only, and its restated contract holds."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from jobs.ranker import network
from schemas import ranking


def test_the_restated_contract_equals_schemas_ranking() -> None:
    assert network.PAD_INDEX == ranking.PAD_INDEX
    assert len(ranking.USER_DENSE_FEATURES) == network.USER_DENSE_SIZE
    assert len(ranking.ITEM_DENSE_FEATURES) == network.ITEM_DENSE_SIZE


def test_it_imports_only_torch_and_the_standard_library() -> None:
    tree = ast.parse(Path(network.__file__).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert imported - set(sys.stdlib_module_names) == {"torch"}
