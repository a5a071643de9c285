"""``make drift-check``: the drift watch over the replayed Taobao stream, unchanged then shifted.

The stream's 110,300 events become the feature job's changelog rows (the
pure-Python reference of the job, equal to its output row for row); the drift
reference is built the way ``make train`` builds it (``jobs.drift reference``:
a seeded 200k-row sample of the same stream's rows). Both runs go through
real Kafka and the real drift job (consumer, windows, Evidently, alerts):

1. the unchanged changelog: every check should say ``ok``;
2. the changelog with both shifts of :mod:`tests.support.drift_shift` injected
   (category mix, longer sequences): every check should flag exactly the four
   columns the shifts move;
3. the closed loop (``--no-closed-loop`` skips it): both runs go through the Kafka
   of the lifecycle stack (:mod:`tests.canary.lifecycle`), whose worker serves the
   trained ranker; the shifted run's alerts then drive ``jobs.retrain``, which
   retrains on the category-swapped events, registers the candidate and canaries it
   if it beats the champion (:mod:`tests.benchmarks.drift_loop`). The timeline is
   printed, and the RESULT line adds ``retrain_runs``, ``candidate_registered``,
   ``candidate_auc``, ``champion_auc`` and ``canary`` (how the run ended).

``RESULT`` counts: ``unshifted_checks`` and ``shifted_checks`` (judged checks
per run), ``unshifted_alerts`` (checks with status drift in run 1),
``shifted_features_flagged`` (injected columns flagged in every judged check
of run 2) of ``shifted_features_injected``, ``false_alarms`` (drift verdicts
on columns no shift moved, over all checks of run 2). A run with no judged
check is a failure (exit 1, no RESULT): zero alarms from zero checks says nothing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from jobs.datasets import RowAudit, read_dataset
from jobs.demo.services import ensure_model
from jobs.drift.check import CheckResult
from jobs.drift.cli import build_loop
from jobs.drift.columns import COLUMN_NAMES
from jobs.drift.reference import changelog_from_events, reference_frame, save_reference
from jobs.drift.reference_cli import DEFAULT_MAX_ROWS
from jobs.drift.settings import DriftSettings
from runtime.kafka import KafkaSettings, TopicSpec, ensure_topics
from runtime.settings import DEFAULT_MODEL_DIR
from schemas.features import FeatureUpdate
from tests.benchmarks.drift_loop import LoopOutcome, closed_loop, shifted_events
from tests.benchmarks.report import (
    BenchmarkFailure,
    fail,
    print_table,
    require_checks,
    result_line,
)
from tests.canary.lifecycle import lifecycle
from tests.conftest import REPO_ROOT
from tests.jobs.drift.streams import produce_changelog
from tests.support.drift_shift import Shift, category_swap, shift_rows
from tests.support.kafka_session import kafka_for_run


@dataclass
class WatchOutcome:
    results: list[CheckResult]
    rows: int
    seconds: float
    check_seconds: float  # of ``seconds``, the time spent in checks (Evidently, report, publish)
    alerts_topic: str = ""

    @property
    def consume_rate(self) -> float:
        """Rows per second while not checking: the job's reading speed."""
        return self.rows / max(self.seconds - self.check_seconds, 1e-9)

    @property
    def judged(self) -> list[CheckResult]:
        return [r for r in self.results if r.snapshot is not None]


def watch(
    kafka: KafkaSettings,
    rows: list[FeatureUpdate],
    reference: Path,
    reports: Path,
    args: argparse.Namespace,
) -> WatchOutcome:
    topic = f"drift-check-{uuid.uuid4().hex[:8]}"
    ensure_topics(kafka, [TopicSpec(topic, 4)])
    produce_changelog(kafka, topic, rows)
    settings = DriftSettings(
        kafka=kafka,
        features_topic=topic,
        recommendations_topic="",
        alerts_topic=topic + "-drift",
        group_id=topic,
        reference=reference,
        reports_dir=reports,
        window_rows=args.window_rows,
        window_seconds=args.window_seconds,
        sample_rows=args.sample_rows,
        metrics_port=0,
    )
    results: list[CheckResult] = []
    loop = build_loop(settings, on_check=lambda result, _path: results.append(result))
    started = time.monotonic()
    try:
        loop.run(idle_seconds=5.0)
    finally:
        loop.close()
    # The idle wait at the end is not work: leave it out of the rate.
    elapsed = time.monotonic() - started - 5.0
    checking = loop.metrics.registry.get_sample_value("streamrec_drift_check_seconds_sum") or 0.0
    return WatchOutcome(results, len(rows), elapsed, checking, settings.alerts_topic)


def feature_scores(outcome: WatchOutcome) -> dict[str, list[float]]:
    scores: dict[str, list[float]] = {}
    for result in outcome.judged:
        for feature in result.alert.features:
            scores.setdefault(feature.feature, []).append(feature.score)
    return scores


def median_scores(outcome: WatchOutcome) -> dict[str, float]:
    return {name: statistics.median(v) for name, v in feature_scores(outcome).items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.benchmarks.drift", description=__doc__)
    # The job's own defaults (a bounded sample per check, windows by time) except a
    # shorter window, so the 1.25M rows give several checks per run.
    parser.add_argument("--window-rows", type=int, default=0, help="rows per window (0 = off)")
    parser.add_argument("--window-seconds", type=float, default=5.0)
    parser.add_argument("--sample-rows", type=int, default=DriftSettings().sample_rows)
    parser.add_argument("--plot", type=Path, default=Path("reports/drift-check.png"))
    parser.add_argument("--reports-dir", type=Path, default=Path("reports/drift-check"))
    parser.add_argument(
        "--closed-loop",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="then let the shifted run's alerts retrain and canary a model (lifecycle stack)",
    )
    parser.add_argument("--consecutive", type=int, default=3, help="drifted checks that retrain")
    parser.add_argument("--model-dir", type=Path, default=REPO_ROOT / DEFAULT_MODEL_DIR)
    args = parser.parse_args(argv)

    events = list(read_dataset("taobao", None, RowAudit()))
    changelog = changelog_from_events(events)
    shift = Shift()
    shifted = shift_rows(changelog, shift, category_swap(events, shift.swapped_categories))
    loop: LoopOutcome | None = None
    with tempfile.TemporaryDirectory(prefix="drift-check-") as model_dir:
        frame = reference_frame(events)
        frame = frame.sample(min(DEFAULT_MAX_ROWS, len(frame)), random_state=0)
        reference = save_reference(frame, Path(model_dir, "drift_reference.parquet"))
        if args.closed_loop:
            ensure_model(args.model_dir)
            with lifecycle(args.model_dir, rate=20.0) as life:
                plain = watch(life.kafka, changelog, reference, args.reports_dir, args)
                moved = watch(life.kafka, shifted, reference, args.reports_dir, args)
                swap = category_swap(events, shift.swapped_categories)
                loop = closed_loop(life, moved.alerts_topic, shifted_events(events, swap),
                                   args.model_dir, args.consecutive)  # fmt: skip
        else:
            with kafka_for_run() as kafka:
                plain = watch(kafka, changelog, reference, args.reports_dir, args)
                moved = watch(kafka, shifted, reference, args.reports_dir, args)

    checks = {"unshifted": len(plain.judged), "shifted": len(moved.judged)}
    try:
        require_checks(checks, what="judged check")
    except BenchmarkFailure as failure:
        return fail(failure)
    injected = set(shift.columns)
    unshifted_alerts = sum(r.alert.status == "drift" for r in plain.results)
    flagged_always = {
        name
        for name in injected
        if all(any(f.feature == name and f.drifted for f in r.alert.features) for r in moved.judged)
    }
    false_alarms = sum(
        f.drifted and f.feature not in injected for r in moved.results for f in r.alert.features
    )
    report(plain, moved, injected, args.plot)
    closed = {} if loop is None else loop_results(loop)
    print(
        result_line(
            unshifted_checks=checks["unshifted"],
            shifted_checks=checks["shifted"],
            unshifted_alerts=unshifted_alerts,
            shifted_features_flagged=len(flagged_always),
            shifted_features_injected=len(injected),
            false_alarms=false_alarms,
            **closed,
        )
    )
    return 0


def loop_results(loop: LoopOutcome) -> dict[str, str | int]:
    """The closed loop's timeline printed, and its figures for the RESULT line."""
    print("\nclosed loop (jobs.retrain):")
    for line in loop.timeline:
        print(f"  {line}")
    run = loop.report
    return {
        "retrain_runs": int(run is not None),
        "candidate_registered": int(run is not None and bool(run.registered)),
        "candidate_auc": f"{run.candidate_auc:.4f}" if run and run.candidate_auc else "nan",
        "champion_auc": f"{run.champion_auc:.4f}" if run and run.champion_auc else "nan",
        "canary": run.ending if run is not None else "none",
    }


def report(plain: WatchOutcome, moved: WatchOutcome, injected: set[str], plot: Path) -> None:
    print_table(
        ["run", "changelog rows", "checks", "judged", "drift", "rows/s", "read rows/s", "s/check"],
        [
            (
                name,
                f"{o.rows:,}",
                str(len(o.results)),
                str(len(o.judged)),
                str(sum(r.alert.status == "drift" for r in o.results)),
                f"{o.rows / o.seconds:,.0f}",
                f"{o.consume_rate:,.0f}",
                f"{o.check_seconds / max(len(o.results), 1):.1f}",
            )
            for name, o in (("unshifted", plain), ("shifted", moved))
        ],
    )
    print()
    plain_scores, moved_scores = median_scores(plain), median_scores(moved)
    thresholds = {
        f.feature: (f.method, f.threshold) for r in plain.judged for f in r.alert.features
    }
    names = [n for n in COLUMN_NAMES if n in thresholds]
    plain_all, moved_all = feature_scores(plain), feature_scores(moved)
    print_table(
        ["column", "method", "threshold", "unshifted", "(max)", "shifted", "(min/max)", "injected"],
        [
            (
                name,
                thresholds[name][0],
                f"{thresholds[name][1]:.2f}",
                f"{plain_scores.get(name, float('nan')):.3f}",
                f"{max(plain_all.get(name, [float('nan')])):.3f}",
                f"{moved_scores.get(name, float('nan')):.3f}",
                f"{(min if name in injected else max)(moved_all.get(name, [float('nan')])):.3f}",
                "yes" if name in injected else "",
            )
            for name in names
        ],
    )
    save_ratio_plot(
        plot,
        names,
        {
            "unchanged stream (max)": [max(plain_all[n]) / thresholds[n][1] for n in names],
            # The worst case: the weakest check of a shifted column, the strongest of the rest.
            "shifted stream (min * / max)": [
                (min if n in injected else max)(moved_all[n]) / thresholds[n][1] for n in names
            ],
        },
        injected,
    )
    print(f"plot: {plot}")


def save_ratio_plot(
    path: Path, names: list[str], series: dict[str, list[float]], injected: set[str]
) -> None:
    """Score / threshold per column on a log scale: drift is right of the line at 1."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    figure, axes = plt.subplots(figsize=(8, 4.5))
    height = 0.8 / len(series)
    for index, (label, ratios) in enumerate(series.items()):
        positions = [row + index * height for row in range(len(names))]
        axes.barh(positions, [max(r, 1e-3) for r in ratios], height=height, label=label)
    axes.axvline(1.0, color="black", linewidth=1, label="threshold")
    axes.set_xscale("log")
    axes.set_yticks(
        [row + height / 2 for row in range(len(names))],
        [f"{n} *" if n in injected else n for n in names],
    )
    axes.invert_yaxis()
    axes.set_xlabel("drift score / threshold (log)   * = shifted on purpose")
    axes.set_title("Drift per column: unchanged stream vs injected shift")
    axes.legend(loc="lower right")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


if __name__ == "__main__":
    sys.exit(main())
