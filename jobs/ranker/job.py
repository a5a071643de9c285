"""The training job end to end: data → samples → baselines → model → variants → files."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from jobs.ranker.against import against
from jobs.ranker.artifacts import (
    MANIFEST,
    METRICS,
    atomic_directory,
    manifest,
    write_json,
    write_model_files,
)
from jobs.ranker.baselines import CoVisitation, popularity_scores
from jobs.ranker.catalogue_eval import CatalogueRows, catalogue_rows, evaluate_catalogue
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
from jobs.ranker.lighten import choose_served, compare_variants
from jobs.ranker.metrics import evaluate
from jobs.ranker.model import DINConfig
from jobs.ranker.samples import Catalog, SampleBuilder, Samples, unique_positives
from jobs.ranker.settings import TrainSettings
from jobs.ranker.training import TrainConfig, score, train
from schemas.ranking import FIRST_ID_INDEX

Report = Callable[[str], None]


@dataclass(frozen=True)
class Split:
    train_events: Events
    catalog: Catalog
    train: Samples
    held_out: Samples
    full: CatalogueRows  # held-out events ranked against the whole catalogue
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


def build_split(settings: TrainSettings, report: Report = print) -> Split:
    """Train rows from days before the cutoff, evaluation rows from the held-out days."""
    loaded, audit = load_events(settings.dataset, settings.file)
    events, cutoff, train_events, held_out_events = _time_split(settings, loaded)
    catalog = Catalog.from_train(train_events)
    rng = np.random.default_rng(settings.seed)
    builder = SampleBuilder(events, catalog, settings.sequence_horizon_min * 60_000)
    train_targets = _at_most(unique_positives(train_events), settings.max_train_rows, rng)
    held_out = unique_positives(held_out_events)
    # The sampled protocol needs a true item in the catalog, so it skips events on
    # items the train split never saw; the whole-catalogue one counts them as misses.
    known = held_out.take(catalog.vocab.item_index(held_out.item) >= 2)
    if len(known) == 0:
        raise TrainingDataError("no held-out positive is an item of the train split")
    eval_targets = _at_most(known, settings.max_eval_rows, rng)
    # Its own generator: the sampled rows (and their metrics) stay what they were.
    full_rng = np.random.default_rng([settings.seed, 1])
    full = catalogue_rows(_at_most(held_out, settings.full_eval_rows, full_rng), builder, full_rng)
    info = {
        "cutoff_ms": cutoff,
        "events": len(events),
        "bad_or_filtered_rows": audit.bad_rows + audit.filtered,
        "train_events": len(train_events),
        "held_out_events": len(held_out_events),
        "held_out_positives": len(held_out),
        "held_out_unknown_items": len(held_out) - len(known),
        "train_rows": len(train_targets),
        "eval_rows": len(eval_targets),
        "full_eval_rows": full.unseen + len(full.rows),
        "full_eval_unseen": full.unseen,
        "num_items": catalog.vocab.num_items,
        "num_categories": catalog.vocab.num_categories,
    }
    report(
        f"{settings.dataset}: {info['train_events']} train / {info['held_out_events']} "
        f"held-out events (from {local_time(cutoff, _profile(settings).utc_offset_hours)}); "
        f"{info['train_rows']} train rows, {info['eval_rows']} eval rows "
        f"({info['held_out_unknown_items']} held-out positives on unseen items skipped by "
        f"the sampled protocol; {info['full_eval_rows']} held-out positives for the whole "
        f"catalogue, {info['full_eval_unseen']} of them on unseen items, counted as misses)"
    )
    return Split(
        train_events,
        catalog,
        builder.build(train_targets, settings.negatives, rng),
        builder.build(eval_targets, settings.eval_negatives, rng),
        full,
        info,
    )


def baseline_metrics(split: Split, covisit: CoVisitation) -> dict[str, dict[str, float]]:
    """Popularity and co-visitation on the same held-out candidate sets as the model."""
    labels = split.held_out.labels
    return {
        "popularity": evaluate(popularity_scores(split.catalog, split.held_out), labels),
        "covisitation": evaluate(covisit.scores(split.held_out, split.catalog), labels),
    }


def run(settings: TrainSettings, report: Report = print) -> dict[str, Any]:
    """Train, evaluate, export and write the model directory; returns metrics.json."""
    started = time.perf_counter()
    split = build_split(settings, report)
    covisit = CoVisitation.from_train(split.train_events, split.catalog)
    baselines = baseline_metrics(split, covisit)
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
    model, losses = train(model_config, split.train, train_config, report)
    train_seconds = time.perf_counter() - train_started
    model_metrics = evaluate(score(model, split.held_out), split.held_out.labels)
    catalogue_started = time.perf_counter()
    catalogue = evaluate_catalogue(split.full, split.catalog, covisit, model)
    report(
        f"whole catalogue: {split.info['full_eval_rows']} held-out events ranked against "
        f"{split.catalog.vocab.num_items - FIRST_ID_INDEX} items "
        f"({time.perf_counter() - catalogue_started:.1f}s)"
    )
    with atomic_directory(settings.out) as staging:
        write_model_files(staging, model, split.catalog)
        variants = compare_variants(staging, split.held_out, settings.threads)
        served = choose_served(variants)
        extra: dict[str, Any] = {}
        if settings.baseline is not None:
            theirs = against(
                settings.baseline, split.held_out, split.catalog.vocab, settings.threads
            )
            extra["against"] = {**theirs, "beaten": served.auc > theirs["auc"]}
            report(
                f"baseline {settings.baseline}: auc {theirs['auc']:.4f} on the same rows, "
                f"this model's served variant {served.auc:.4f}"
            )
        metrics = {
            "dataset": settings.dataset,
            "seed": settings.seed,
            "split": split.info,
            "model": model_metrics,
            "baselines": baselines,
            "catalogue": catalogue,
            "variants": [v.as_dict() for v in variants],
            "served_variant": served.variant,
            "eval_candidates": 1 + settings.eval_negatives,
            "train_negatives": settings.negatives,
            "sequence_horizon_min": settings.sequence_horizon_min,
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
                sequence_horizon_min=settings.sequence_horizon_min,
            ),
        )
    return metrics
