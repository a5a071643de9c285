"""The canary check's picture: answers per second by variant, degraded ones apart."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from schemas.records import Recommendation


def plot_timeline(recs: list[Recommendation], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not recs:
        return
    start = min(r.produced_at for r in recs)
    series: dict[str, Counter[int]] = {}
    for rec in recs:
        label = (rec.variant or "default") + (" degraded" if rec.degraded else "")
        series.setdefault(label, Counter())[(rec.produced_at - start) // 1000] += 1
    figure, axes = plt.subplots(figsize=(10, 4.5))
    for label, counts in sorted(series.items()):
        seconds = sorted(counts)
        axes.plot(seconds, [counts[s] for s in seconds], label=label, linewidth=1)
    axes.set_xlabel("seconds")
    axes.set_ylabel("answers / s")
    axes.set_title("canary check: answers per second by variant (stream only)")
    axes.legend(fontsize=8)
    figure.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=120)
    plt.close(figure)
    print(f"plot: {out}")
