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
    assert len(ranking.CANDIDATE_FEATURES) == network.CAND_DENSE_SIZE


def test_it_imports_only_torch_and_the_standard_library() -> None:
    tree = ast.parse(Path(network.__file__).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert imported - set(sys.stdlib_module_names) == {"torch"}


def test_without_ids_only_the_features_decide_and_distinct_unseen_items_differ() -> None:
    import torch

    model = network.DIN(network.DINConfig(num_items=5, num_categories=3)).eval()
    dense = torch.rand(1, 3, network.CAND_DENSE_SIZE)
    seq = torch.zeros(1, ranking.SEQ_LEN, dtype=torch.int32)
    oov = torch.full((1, 3), ranking.OOV_INDEX, dtype=torch.int32)
    known = torch.tensor([[2, 3, 4]], dtype=torch.int32)
    user = torch.zeros(1, 4)
    with torch.no_grad():
        unseen = model(seq, seq, user, oov, oov, dense)
        seen = model(seq, seq, user, known, known, dense)
    torch.testing.assert_close(unseen, seen)  # ids do not enter the score
    assert len(set(unseen[0].tolist())) == 3  # three unseen items, three scores


def test_standardising_uses_the_real_candidates_only() -> None:
    import torch

    model = network.DIN(network.DINConfig(num_items=5, num_categories=3))
    dense = torch.zeros(1, 2, network.CAND_DENSE_SIZE)
    dense[0, 0] = 3.0
    dense[0, 1] = 100.0  # padding: must not move the mean
    mask = torch.tensor([[True, False]])
    model.standardise_by(torch.cat((dense, dense + 1)), torch.cat((mask, mask)))
    torch.testing.assert_close(model.dense_mean, torch.full((network.CAND_DENSE_SIZE,), 3.5))
