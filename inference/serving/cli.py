"""`python -m inference.serving publish|rollout|load|rollback|status`."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from inference.serving import control, repository
from inference.serving.errors import ServingError
from inference.serving.settings import MODELS, ServingSettings


def build_parser(settings: ServingSettings) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m inference.serving",
        description="Publish ranker versions into a Triton model repository and swap the served "
        "version with no failed request (explicit model control). Settings: "
        "STREAMREC_TRITON_MODEL_REPOSITORY (default .stack/models), STREAMREC_TRITON_HTTP_URL "
        "or STREAMREC_TRITON_HTTP_PORT (default 8000), STREAMREC_TRITON_MODEL (default "
        "ranker_python), STREAMREC_MODEL_DIR (default .cache/ranker).",
    )
    parser.add_argument(
        "--repository",
        type=Path,
        default=settings.repository,
        help=f"model repository (default {settings.repository})",
    )
    parser.add_argument(
        "--url",
        default=settings.http_url,
        help=f"Triton's HTTP endpoint (default {settings.http_url})",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    publish = commands.add_parser(
        "publish",
        help="copy an artifacts directory's served model into the next version "
        "of every model (does not change what Triton serves)",
    )
    publish.add_argument(
        "artifacts",
        nargs="?",
        type=Path,
        default=settings.artifacts_dir,
        help=f"artifacts directory (default {settings.artifacts_dir})",
    )
    publish.add_argument(
        "--models",
        default=",".join(MODELS),
        help="comma-separated models to publish into (default: all)",
    )
    for name, text in {
        "rollout": "load a version beside the served one, probe it, then serve it alone "
        "(default: the newest published)",
        "load": "same as rollout",
        "rollback": "swap back to the newest published version older than the served one",
        "status": "published versions, pinned policy and Triton's state of the model",
    }.items():
        sub = commands.add_parser(name, help=text, description=text)
        sub.add_argument(
            "--model",
            default=settings.model,
            choices=MODELS,
            help=f"model to act on (default {settings.model})",
        )
        if name in ("rollout", "load"):
            sub.add_argument("--version", type=int, default=None, help="version to serve")
    return parser


def run(argv: Sequence[str] | None = None) -> int:
    settings = ServingSettings.from_env()
    args = build_parser(settings).parse_args(argv)
    if args.command == "publish":
        models = [name.strip() for name in args.models.split(",") if name.strip()]
        number = repository.publish(args.artifacts, args.repository, models)
        print(
            f"published {args.artifacts} as version {number} of {', '.join(models)} "
            f"in {args.repository}"
        )
        return 0
    triton = control.TritonControl(args.url)
    model_dir = args.repository / args.model
    if args.command in ("rollout", "load"):
        served = control.rollout(triton, model_dir, args.version)
        print(f"{args.model}: serving version {served}")
    elif args.command == "rollback":
        served = control.rollback(triton, model_dir)
        print(f"{args.model}: rolled back to version {served}")
    else:
        print(json.dumps(control.describe(triton, model_dir), indent=2))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="serving: %(message)s", stream=sys.stderr)
    try:
        return run(argv)
    except ServingError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
