"""The out-of-stock set in Redis: producers update it, the worker filters by it.

The set ``<project>:inventory:out_of_stock`` holds raw item ids that must not be
recommended. An item is in stock unless it is in the set, so an empty Redis
means "everything in stock". Update it from any producer with :func:`mark` or
``python -m inference.worker.inventory --out 12 34 --back 56``.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from runtime.online.connect import OnlineClient, connect, node_client
from runtime.settings import Settings, redis_url_setting, setting
from schemas.views import PROJECT

DEFAULT_PROJECT = PROJECT


@dataclass(frozen=True)
class InventorySettings(Settings):
    """The Redis and Feast project the worker reads, from the worker's variables."""

    redis_url: str = redis_url_setting()
    project: str = setting(
        PROJECT, env="STREAMREC_WORKER_PROJECT", help="Feast project the worker reads"
    )


def inventory_key(project: str = DEFAULT_PROJECT) -> str:
    return f"{project}:inventory:out_of_stock"


def mark(
    client: OnlineClient,
    out_of_stock: Iterable[int] = (),
    back_in_stock: Iterable[int] = (),
    project: str = DEFAULT_PROJECT,
) -> None:
    """Mark items out of stock and back in stock, atomically."""
    out, back = list(out_of_stock), list(back_in_stock)
    # One key, so one node even on a cluster, where only a node runs MULTI/EXEC.
    pipe = node_client(client, inventory_key(project)).pipeline(transaction=True)
    if out:
        pipe.sadd(inventory_key(project), *out)
    if back:
        pipe.srem(inventory_key(project), *back)
    pipe.execute()


def out_of_stock(client: OnlineClient, project: str = DEFAULT_PROJECT) -> set[int]:
    members: set[bytes] = client.smembers(inventory_key(project))  # type: ignore[assignment]
    return {int(member) for member in members}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m inference.worker.inventory",
        description="Mark items out of stock (or back in stock) for the inference worker.",
    )
    parser.add_argument("--out", type=int, nargs="*", default=[], help="item ids now out of stock")
    parser.add_argument("--back", type=int, nargs="*", default=[], help="item ids back in stock")
    parser.add_argument("--list", action="store_true", help="print the out-of-stock items")
    InventorySettings.add_flags(parser)
    args = parser.parse_args(argv)
    settings = InventorySettings.load(None, args)
    client = connect(settings.redis_url)
    mark(client, args.out, args.back, settings.project)
    if args.list:
        print(" ".join(str(i) for i in sorted(out_of_stock(client, settings.project))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
