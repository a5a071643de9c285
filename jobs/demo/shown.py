"""A few answers shown beside the clicks they answered, for people watching the demo."""

from __future__ import annotations

from jobs.demo.outcome import Answered
from runtime.online.connect import connect
from runtime.online.redis_store import read_rows
from schemas.views import PROJECT

SHOWN = 3
ITEMS_SHOWN = 5


def shown_lines(
    redis_url: str, answered: list[Answered], project: str = PROJECT, count: int = SHOWN
) -> list[str]:
    """The answers of the users with the longest click sequences, with those clicks."""
    latest = {a.recommendation.user_id: a.recommendation for a in answered}
    users = list(latest)
    client = connect(redis_url)
    try:
        rows = read_rows(
            client, "user_recent_clicks", users, ["item_ids", "behaviors"], project=project
        )
    finally:
        client.close()
    clicks = {
        user: list(zip(row["item_ids"], row["behaviors"], strict=True))
        for user, row in zip(users, rows, strict=True)
        if row and row.get("item_ids")
    }
    busiest = sorted(clicks, key=lambda user: len(clicks[user]), reverse=True)[:count]
    lines = []
    for user in busiest:
        rec = latest[user]
        recent = ", ".join(f"{item}({behavior})" for item, behavior in clicks[user][-ITEMS_SHOWN:])
        items = ", ".join(f"{i.item_id}[{i.route} {i.score:.3f}]" for i in rec.items[:ITEMS_SHOWN])
        flag = " (degraded)" if rec.degraded else ""
        lines += [f"user {user} clicked: {recent}", f"  → recommended{flag}: {items}"]
    return lines
