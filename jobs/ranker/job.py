"""The training job end to end: data → store replay → rows → model → checks → files.

Rows come from a replay of the online store over the data (``store_replay``): the
model learns to rank the candidate lists the worker ranks. It is judged on the
held-out period's lists against the order it re-ranks (``norank``), the user's own
items first (``recent-first``), popularity and a LambdaMART baseline on the same
rows, and ranked against the whole catalogue. A model that does not beat the
recall order on the held-out lists is still written, but its manifest says so
(``beats_recall_order``): publishing refuses it, and a worker serving it answers
in recall order, flagged.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from jobs.ranker.against import against
from jobs.ranker.artifacts import (
    MANIFEST,
    METRICS,
    atomic_directory,
    manifest,
    write_json,
    write_model_files,
)
from jobs.ranker.baselines import CoVisitation
from jobs.ranker.boosted import lambdamart_scores, train_lambdamart
from jobs.ranker.catalogue_eval import evaluate_catalogue
from jobs.ranker.errors import EmptySplitError, TrainingDataError
from jobs.ranker.events import (
    PROFILES,
    DatasetProfile,
    Events,
    describe_span,
    holdout_start,
    in_range,
    load_events,
    local_time,
    span_days,
    split_by_time,
)
from jobs.ranker.item_vectors import item_vectors
from jobs.ranker.lighten import choose_served, compare_variants
from jobs.ranker.list_metrics import PerRequest, judge, judge_fixed, paired_ratio_interval
from jobs.ranker.list_rows import list_rows
from jobs.ranker.model import DINConfig
from jobs.ranker.samples import Catalog
from jobs.ranker.settings import TrainSettings
from jobs.ranker.store_replay import EmbeddingSearch, ReplayedRequest, StoreReplay
from jobs.ranker.training import TrainConfig, score, train
from schemas.final_list import MIN_NEW_ITEMS
from schemas.ranking import FIRST_ID_INDEX
from schemas.recall import merge_order_scores, recent_first_scores

Report = Callable[[str], None]
POPULAR_LIMIT = 50
# Train rows come from the last part of the train period; the embedding route's vectors
# for them from the part before, so that no row's route saw its own future (the served
# vectors are factored from the whole train period).
VECTOR_SHARE = 0.6
# Fewer train lists with a touched candidate than this cannot train a ranker.
MIN_TRAIN_LISTS = 50


@dataclass(frozen=True)
class Split:
    catalog: Catalog
    train_events: Events
    train: list[ReplayedRequest]  # with a touched candidate each
    held_out: list[ReplayedRequest]
    served_vectors: npt.NDArray[Any]
    info: dict[str, int]


def _profile(settings: TrainSettings) -> DatasetProfile:
    profile = PROFILES.get(settings.dataset, DatasetProfile())
    if settings.holdout_days:
        profile = replace(profile, holdout_days=settings.holdout_days)
    return profile


def _at_most(events: Events, limit: int, rng: np.random.Generator) -> Events:
    if not limit or len(events) <= limit:
        return events
    keep = np.zeros(len(events), dtype=bool)
    keep[rng.choice(len(events), size=limit, replace=False)] = True
    return events.take(keep)


def _split_advice(settings: TrainSettings, events: Events, profile: DatasetProfile) -> str:
    days = span_days(events, profile)
    if settings.holdout_days:
        return (
            f"--holdout-days {settings.holdout_days} (STREAMREC_TRAIN_HOLDOUT_DAYS) does not fit "
            f"data spanning {describe_span(events, profile)}: set it between 1 and "
            f"{max(days - 1, 1)}, or 0 to hold out the days of the last "
            f"{profile.holdout_fraction:.0%} of events"
        )
    return (
        f"the default hold-out (the days of the last {profile.holdout_fraction:.0%} of events) "
        f"cannot split data spanning {describe_span(events, profile)}; it needs events at "
        "more than one time (set --holdout-days to choose the span)"
    )


def _time_split(settings: TrainSettings, events: Events) -> tuple[Events, int, Events, Events]:
    """The events in range, the cut and its two sides; an error saying what the data
    spans and what to set when one side is empty."""
    profile = _profile(settings)
    events = in_range(events, profile)
    if len(events) == 0:
        raise TrainingDataError(
            f"{settings.dataset}: no event between {profile.start} and {profile.end} "
            "(local dates), the dataset's valid range"
        )
    cutoff = holdout_start(events, profile)
    try:
        return events, cutoff, *split_by_time(events, cutoff)
    except EmptySplitError as error:
        raise TrainingDataError(
            f"a hold-out from {local_time(cutoff, profile.utc_offset_hours)} leaves "
            f"{error.train_events} train and {error.held_out_events} held-out events: "
            f"{_split_advice(settings, events, profile)}"
        ) from error


def _sample(mask: npt.NDArray[Any], limit: int, rng: np.random.Generator) -> npt.NDArray[Any]:
    """``mask`` with at most ``limit`` of its True kept, a seeded sample (0 = all)."""
    chosen = np.flatnonzero(mask)
    if limit and len(chosen) > limit:
        keep = np.zeros_like(mask)
        keep[rng.choice(chosen, size=limit, replace=False)] = True
        return keep
    return mask


def build_split(settings: TrainSettings, report: Report = print) -> Split:
    """Train lists from the end of the train period, evaluation lists from the held-out days."""
    loaded, audit = load_events(settings.dataset, settings.file)
    events, cutoff, train_events, held_out_events = _time_split(settings, loaded)
    catalog = Catalog.from_train(train_events)
    rng = np.random.default_rng(settings.seed)
    start = int(train_events.ts.min())
    vectors_until = start + int(VECTOR_SHARE * (cutoff - start))
    started = time.perf_counter()
    early = item_vectors(train_events.take(train_events.ts < vectors_until), catalog.vocab)
    served = item_vectors(train_events, catalog.vocab)
    popular = catalog.popular_raw_items(POPULAR_LIMIT)
    train_mask = _sample(train_events.ts >= vectors_until, settings.max_train_rows, rng)
    replay = StoreReplay(
        train_events, EmbeddingSearch(early, catalog.vocab, catalog.item_category), popular
    )
    report(f"replaying the store over the train period for {int(train_mask.sum())} requests ...")
    replayed = list(replay.run(train_mask))
    train_lists = [r for r in replayed if any(c.item_id in r.truth for c in r.candidates)]
    held_mask = _sample(events.ts >= cutoff, settings.max_eval_rows, rng)
    replay = StoreReplay(
        events, EmbeddingSearch(served, catalog.vocab, catalog.item_category), popular
    )
    report(f"replaying the held-out period for {int(held_mask.sum())} requests ...")
    held_out = list(replay.run(held_mask))
    if len(train_lists) < MIN_TRAIN_LISTS:
        raise TrainingDataError(
            f"{settings.dataset}: {len(train_lists)} train requests have a candidate the user "
            f"touched next ({len(replayed)} replayed); a ranker needs {MIN_TRAIN_LISTS} at "
            "least: the data is too small or too sparse to train on"
        )
    info = {
        "cutoff_ms": cutoff,
        "events": len(events),
        "bad_or_filtered_rows": audit.bad_rows + audit.filtered,
        "train_events": len(train_events),
        "held_out_events": len(held_out_events),
        "train_requests": len(replayed),
        "train_rows": len(train_lists),
        "eval_rows": len(held_out),
        "num_items": catalog.vocab.num_items,
        "num_categories": catalog.vocab.num_categories,
    }
    report(
        f"{settings.dataset}: {info['train_events']} train / {info['held_out_events']} "
        f"held-out events (from {local_time(cutoff, _profile(settings).utc_offset_hours)}); "
        f"{len(train_lists)} of {len(replayed)} replayed train requests have a touched "
        f"candidate; {len(held_out)} held-out requests "
        f"({time.perf_counter() - started:.0f}s)"
    )
    return Split(catalog, train_events, train_lists, held_out, served, info)


def _model_scores(
    scores: npt.NDArray[Any], requests: Sequence[ReplayedRequest]
) -> list[list[float]]:
    return [scores[n, : len(r.candidates)].astype(float).tolist() for n, r in enumerate(requests)]


def list_quality(
    split: Split, ranked: dict[str, list[list[float]]], min_new: int
) -> tuple[dict[str, dict[str, float]], dict[str, PerRequest]]:
    """Each method's answers on the held-out lists, and the per-request outcomes."""
    held = split.held_out
    methods = {
        **ranked,
        "norank": [merge_order_scores(len(r.candidates)) for r in held],
        "recent-first": [recent_first_scores(r.candidates, r.state.routes["recent"]) for r in held],
    }
    outcomes = {name: judge(held, scores, min_new) for name, scores in methods.items()}
    outcomes["popular"] = judge_fixed(held, split.catalog.popular_raw_items(POPULAR_LIMIT))
    return {name: o.summary() for name, o in outcomes.items()}, outcomes


def run(settings: TrainSettings, report: Report = print) -> dict[str, Any]:
    """Train, evaluate, export and write the model directory; returns metrics.json."""
    started = time.perf_counter()
    split = build_split(settings, report)
    rows = list_rows(split.train)
    held_rows = list_rows(split.held_out)
    model_config = DINConfig(
        split.catalog.vocab.num_items, split.catalog.vocab.num_categories, settings.dim
    )
    train_config = TrainConfig(
        epochs=settings.epochs,
        batch_size=settings.batch_size,
        learning_rate=settings.learning_rate,
        seed=settings.seed,
        threads=settings.threads,
    )
    train_started = time.perf_counter()
    model, losses = train(model_config, rows, train_config, report)
    train_seconds = time.perf_counter() - train_started
    boosted = train_lambdamart(rows, settings.seed, settings.threads)
    ranked = {
        "model": _model_scores(score(model, held_rows), split.held_out),
        "lambdamart": lambdamart_scores(boosted, split.held_out),
    }
    quality, outcomes = list_quality(split, ranked, MIN_NEW_ITEMS)
    ratio = paired_ratio_interval(outcomes["model"].hits, outcomes["norank"].hits)
    beats = all(quality["model"][m] > quality["norank"][m] for m in ("hit_at_10", "ndcg_at_10"))
    covisit = CoVisitation.from_train(split.train_events, split.catalog)
    catalogue = evaluate_catalogue(split.held_out, ranked["model"], split.catalog, covisit)
    report(
        f"whole catalogue: {split.info['eval_rows']} held-out requests ranked against "
        f"{split.catalog.vocab.num_items - FIRST_ID_INDEX} items"
    )
    with atomic_directory(settings.out) as staging:
        write_model_files(staging, model, split.catalog, split.served_vectors)
        variants = compare_variants(staging, held_rows, settings.threads)
        served = choose_served(variants)
        extra: dict[str, Any] = {}
        if settings.baseline is not None:
            theirs = against(settings.baseline, held_rows, split.catalog.vocab, settings.threads)
            extra["against"] = {**theirs, "beaten": served.auc > theirs["auc"]}
            report(
                f"baseline {settings.baseline}: auc {theirs['auc']:.4f} on the same rows, "
                f"this model's served variant {served.auc:.4f}"
            )
        metrics = {
            "dataset": settings.dataset,
            "seed": settings.seed,
            "split": split.info,
            "lists": quality,
            "min_new_items": MIN_NEW_ITEMS,
            "hit_ratio_vs_norank": {"ratio": ratio[0], "low": ratio[1], "high": ratio[2]},
            "beats_recall_order": beats,
            "catalogue": catalogue,
            "variants": [v.as_dict() for v in variants],
            "served_variant": served.variant,
            "train_loss": losses,
            "train_seconds": train_seconds,
            "total_seconds": time.perf_counter() - started,
            **extra,
        }
        write_json(staging / METRICS, metrics)
        write_json(
            staging / MANIFEST,
            manifest(
                served.variant,
                served.file,
                dataset=settings.dataset,
                seed=settings.seed,
                num_items=model_config.num_items,
                num_categories=model_config.num_categories,
                dim=model_config.dim,
                served_auc=served.auc,
                fp32_file="model.onnx",
                beats_recall_order=beats,
            ),
        )
    return metrics
