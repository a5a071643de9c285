"""Table, plot, RESULT line and the failure-aware counting shared by the benchmarks.

A benchmark's figures must not improve when work fails: a sample that never
completed counts as +infinity in the percentiles (so it pushes the tail up), a
rate divides only completed work by the measured elapsed time, and a comparison
or a check that did not happen is a :class:`BenchmarkFailure`, never a zero.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path


class BenchmarkFailure(RuntimeError):
    """The run cannot support its figures: the benchmark exits non-zero, no RESULT line."""


def fail(failure: BenchmarkFailure) -> int:
    print(f"FAILED: {failure}", file=sys.stderr)
    return 1


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile; NaN when there is no sample at all."""
    if not values:
        return math.nan
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def failure_percentile(values: Sequence[float], failures: int, pct: float) -> float:
    """``percentile`` with ``failures`` more samples at +infinity (work that never completed)."""
    return percentile([*values, *[math.inf] * failures], pct)


def failure_rate(total: int, failures: int) -> float:
    """Share of ``total`` that failed; 1.0 when nothing was attempted (no evidence is no pass)."""
    return failures / total if total else 1.0


def first_differences(
    left: Sequence[bytes], right: Sequence[bytes], limit: int = 3
) -> list[tuple[int, bytes | None, bytes | None]]:
    """The first ``limit`` positions where the sorted rows differ (None: that side ran out)."""
    a, b = sorted(left), sorted(right)
    out: list[tuple[int, bytes | None, bytes | None]] = []
    for index in range(max(len(a), len(b))):
        x = a[index] if index < len(a) else None
        y = b[index] if index < len(b) else None
        if x != y:
            out.append((index, x, y))
            if len(out) == limit:
                break
    return out


def require_same_rows(
    names: tuple[str, str], left: Sequence[bytes], right: Sequence[bytes]
) -> None:
    """Raise unless both outputs hold the same rows (order aside), showing the first differences."""
    differences = first_differences(left, right)
    if not differences:
        return
    lines = [f"{names[0]} ({len(left):,} rows) and {names[1]} ({len(right):,} rows) differ; "
             "first differing rows, sorted:"]  # fmt: skip
    for index, x, y in differences:
        lines += [f"  [{index}] {names[0]}: {x!r}", f"  [{index}] {names[1]}: {y!r}"]
    raise BenchmarkFailure("\n".join(lines))


def require_checks(checks: Mapping[str, int], what: str = "check") -> None:
    """Raise if any run had no check: zero alarms from zero checks is no result."""
    empty = [run for run, count in checks.items() if count <= 0]
    if empty:
        counts = ", ".join(f"{run} {count}" for run, count in checks.items())
        raise BenchmarkFailure(
            f"no {what} ran in the {' and '.join(empty)} run ({what}s: {counts}); "
            "zero alarms from zero checks is no result"
        )


def print_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]
    for line in (header, ["-" * w for w in widths], *rows):
        print("  ".join(str(cell).rjust(width) for cell, width in zip(line, widths, strict=True)))


def result_line(**values: float | str) -> str:
    """``RESULT key=value ...``: numbers rounded to integers, strings (e.g. rates) as given."""
    return "RESULT " + " ".join(
        f"{key}={value if isinstance(value, str) else format(value, '.0f')}"
        for key, value in values.items()
    )


def save_bar_plot(
    path: Path, title: str, groups: Sequence[str], series: Mapping[str, Sequence[float]]
) -> None:
    """Grouped bars, one group per row of the table.

    An infinite value (a percentile reached by failures) is a hatched bar above the
    tallest finite one, marked with the infinity sign; NaN (no sample) draws nothing.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    figure, axes = plt.subplots(figsize=(7, 4))
    width = 0.8 / len(series)
    finite = [v for values in series.values() for v in values if math.isfinite(v)]
    top = 1.15 * max(finite, default=1.0)
    for index, (name, values) in enumerate(series.items()):
        positions = [g + index * width for g in range(len(groups))]
        bars = axes.bar(positions, [top if math.isinf(v) else v for v in values], width=width,
                        label=name)  # fmt: skip
        for bar, value in zip(bars, values, strict=True):
            if math.isinf(value):
                bar.set_hatch("//")
                axes.annotate("∞", (bar.get_x() + bar.get_width() / 2, top), ha="center")
    axes.set_xticks([g + width * (len(series) - 1) / 2 for g in range(len(groups))], groups)
    axes.set_title(title)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def save_cdf_plot(
    path: Path,
    title: str,
    series: Mapping[str, tuple[Sequence[float], int]],
    marker: float | None = None,
) -> None:
    """Latency CDFs, one line per name: (completed samples, failures) each.

    The fraction is over every sample, failures included, so a line with failures
    never reaches 1 (they are beyond any latency). ``marker`` draws a vertical line.
    """
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    figure, axes = plt.subplots(figsize=(7, 4))
    for name, (values, failures) in series.items():
        ordered = sorted(values)
        total = len(ordered) + failures
        if total:
            fractions = [(n + 1) / total for n in range(len(ordered))]
            axes.step(ordered, fractions, where="post", label=f"{name} ({total:,} requests)")
    if marker is not None:
        axes.axvline(marker, color="grey", linestyle="--", linewidth=1)
    axes.axhline(0.99, color="grey", linestyle=":", linewidth=1)
    axes.set_xscale("log")
    axes.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    axes.set_xlabel("ms")
    axes.set_ylabel("fraction of requests answered")
    axes.set_title(title)
    axes.legend(loc="upper left")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
