"""DIN ranker: the candidate attends over the user's recent clicks.

Inputs follow ``inference.ranking.contract``: the click sequence arrives once per
user and is broadcast over that user's candidates inside the model, so a request
never carries the sequence copied per candidate.

Only plain tensor ops are used (matmul, softmax, where, concat, relu, sigmoid) so
the ONNX export runs on ONNX Runtime and survives fp16 and int8 conversion.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from inference.ranking.contract import (
    ITEM_DENSE_FEATURES,
    PAD_INDEX,
    USER_DENSE_FEATURES,
)

# Softmax fill for padded positions: finite and representable in fp16, unlike -inf
# or -1e9, so an all-padding sequence yields uniform weights over zero vectors
# rather than NaN.
_MASK_FILL = -1.0e4


@dataclass(frozen=True)
class DINConfig:
    """Hyper-parameters saved beside the model as ``model_config.json``."""

    num_items: int
    num_categories: int
    dim: int = 32
    attention_hidden: tuple[int, ...] = (64, 32)
    final_hidden: tuple[int, ...] = (128, 64)
    user_dense_size: int = len(USER_DENSE_FEATURES)
    item_dense_size: int = len(ITEM_DENSE_FEATURES)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> DINConfig:
        values = dict(raw)
        values["attention_hidden"] = tuple(values.get("attention_hidden", (64, 32)))
        values["final_hidden"] = tuple(values.get("final_hidden", (128, 64)))
        return cls(**values)

    def save(self, path: Path) -> None:
        path.write_text(self.to_json() + "\n")

    @classmethod
    def load(cls, path: Path) -> DINConfig:
        return cls.from_dict(json.loads(path.read_text()))


class _PairAttention(nn.Module):
    """DIN's activation unit over every (candidate, sequence position) pair.

    DIN feeds ``[q, k, q - k, q * k]`` to an MLP. Its first linear layer is
    factored here as ``(Wq + Wd) q + (Wk - Wd) k + Wp (q * k)``, which is the same
    function without materialising the 4E-wide concat per pair: the two linear
    parts are computed once per candidate and once per position.
    """

    def __init__(self, width: int, hidden: tuple[int, ...]) -> None:
        super().__init__()
        first = hidden[0]
        self.query = nn.Linear(width, first)
        self.key = nn.Linear(width, first, bias=False)
        self.product = nn.Parameter(torch.empty(first, width))
        nn.init.xavier_uniform_(self.product)
        layers: list[nn.Module] = []
        for size_in, size_out in itertools.pairwise(hidden):
            layers += [nn.Linear(size_in, size_out), nn.ReLU()]
        layers.append(nn.Linear(hidden[-1], 1))
        self.rest = nn.Sequential(*layers)

    def forward(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """query [B,C,E], keys [B,L,E] → logits [B,C,L]."""
        q_part = self.query(query).unsqueeze(2)  # [B,C,1,H]
        k_part = self.key(keys).unsqueeze(1)  # [B,1,L,H]
        # (q * Wp_h) · k for every hidden unit h: [B,C,H,E] @ [B,1,E,L] → [B,C,H,L]
        scaled_q = query.unsqueeze(2) * self.product
        p_part = torch.matmul(scaled_q, keys.transpose(1, 2).unsqueeze(1)).transpose(2, 3)
        hidden = torch.relu(q_part + k_part + p_part)  # [B,C,L,H]
        logits: torch.Tensor = self.rest(hidden).squeeze(-1)
        return logits


def _mlp(size_in: int, hidden: tuple[int, ...]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for size_out in hidden:
        layers += [nn.Linear(size_in, size_out), nn.ReLU()]
        size_in = size_out
    layers.append(nn.Linear(size_in, 1))
    return nn.Sequential(*layers)


class DIN(nn.Module):
    """Click probability of each candidate given the user's click sequence."""

    def __init__(self, config: DINConfig) -> None:
        super().__init__()
        self.config = config
        self.item_embedding = nn.Embedding(config.num_items, config.dim, padding_idx=PAD_INDEX)
        self.category_embedding = nn.Embedding(
            config.num_categories, config.dim, padding_idx=PAD_INDEX
        )
        for table in (self.item_embedding, self.category_embedding):
            nn.init.normal_(table.weight, std=0.05)
            with torch.no_grad():
                table.weight[PAD_INDEX].zero_()
        width = 2 * config.dim
        self.attention = _PairAttention(width, config.attention_hidden)
        final_in = 3 * width + config.user_dense_size + config.item_dense_size
        self.head = _mlp(final_in, config.final_hidden)

    def _embed(self, items: torch.Tensor, cats: torch.Tensor) -> torch.Tensor:
        # int32 ids in the contract; the embedding lookup wants int64.
        return torch.cat(
            (self.item_embedding(items.long()), self.category_embedding(cats.long())), dim=-1
        )

    def logits(
        self,
        seq_items: torch.Tensor,
        seq_cats: torch.Tensor,
        user_dense: torch.Tensor,
        cand_items: torch.Tensor,
        cand_cats: torch.Tensor,
        cand_dense: torch.Tensor,
    ) -> torch.Tensor:
        """Pre-sigmoid scores [B,C]; training uses these with BCE-with-logits."""
        keys = self._embed(seq_items, seq_cats)  # [B,L,E]
        query = self._embed(cand_items, cand_cats)  # [B,C,E]
        weights = self.attention(query, keys)  # [B,C,L]
        valid = (seq_items != PAD_INDEX).unsqueeze(1)  # [B,1,L]
        weights = torch.where(valid, weights, torch.full_like(weights, _MASK_FILL))
        weights = torch.softmax(weights, dim=-1) * valid.to(weights.dtype)
        interest = torch.matmul(weights, keys)  # [B,C,E]
        user = user_dense.unsqueeze(1).expand(-1, query.shape[1], -1)  # [B,C,4]
        features = torch.cat((query, interest, query * interest, user, cand_dense), dim=-1)
        scores: torch.Tensor = self.head(features).squeeze(-1)
        return scores

    def forward(
        self,
        seq_items: torch.Tensor,
        seq_cats: torch.Tensor,
        user_dense: torch.Tensor,
        cand_items: torch.Tensor,
        cand_cats: torch.Tensor,
        cand_dense: torch.Tensor,
    ) -> torch.Tensor:
        """Click probabilities [B,C]."""
        return torch.sigmoid(
            self.logits(seq_items, seq_cats, user_dense, cand_items, cand_cats, cand_dense)
        )
