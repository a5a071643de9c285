"""Table, plot and RESULT line shared by the benchmarks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path


def print_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows, strict=True)]
    for line in (header, ["-" * w for w in widths], *rows):
        print("  ".join(str(cell).rjust(width) for cell, width in zip(line, widths, strict=True)))


def result_line(**values: float) -> str:
    return "RESULT " + " ".join(f"{key}={value:.0f}" for key, value in values.items())


def save_bar_plot(
    path: Path, title: str, groups: Sequence[str], series: Mapping[str, Sequence[float]]
) -> None:
    """Grouped bars, one group per row of the table."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    figure, axes = plt.subplots(figsize=(7, 4))
    width = 0.8 / len(series)
    for index, (name, values) in enumerate(series.items()):
        positions = [g + index * width for g in range(len(groups))]
        axes.bar(positions, values, width=width, label=name)
    axes.set_xticks([g + width * (len(series) - 1) / 2 for g in range(len(groups))], groups)
    axes.set_title(title)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
