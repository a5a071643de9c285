"""The out-of-stock set in Redis: producers update it, the worker filters by it.

The set ``<project>:inventory:out_of_stock`` holds raw item ids that must not be
recommended. An item is in stock unless it is in the set, so an empty Redis
means "everything in stock". Update it from any producer with :func:`mark` or
``python -m inference.worker.inventory --out 12 34 --back 56``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable, Sequence

import redis

from schemas.kafka import ENV_PREFIX

DEFAULT_PROJECT = "streamrec"


def inventory_key(project: str = DEFAULT_PROJECT) -> str:
    return f"{project}:inventory:out_of_stock"


def mark(
    client: redis.Redis,
    out_of_stock: Iterable[int] = (),
    back_in_stock: Iterable[int] = (),
    project: str = DEFAULT_PROJECT,
) -> None:
    """Mark items out of stock and back in stock, atomically."""
    out, back = list(out_of_stock), list(back_in_stock)
    pipe = client.pipeline(transaction=True)
    if out:
        pipe.sadd(inventory_key(project), *out)
    if back:
        pipe.srem(inventory_key(project), *back)
    pipe.execute()


def out_of_stock(client: redis.Redis, project: str = DEFAULT_PROJECT) -> set[int]:
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
    parser.add_argument(
        "--redis-url",
        default=os.environ.get(ENV_PREFIX + "REDIS_URL", "redis://127.0.0.1:6379/0"),
        help="[STREAMREC_REDIS_URL]",
    )
    parser.add_argument(
        "--project",
        default=os.environ.get(ENV_PREFIX + "WORKER_PROJECT", DEFAULT_PROJECT),
        help="[STREAMREC_WORKER_PROJECT] Feast project the worker reads",
    )
    args = parser.parse_args(argv)
    client = redis.Redis.from_url(args.redis_url)
    mark(client, args.out, args.back, args.project)
    if args.list:
        print(" ".join(str(i) for i in sorted(out_of_stock(client, args.project))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
