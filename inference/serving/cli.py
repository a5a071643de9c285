"""``streamrec-serving publish|rollout|load|rollback|status|canary``."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence

from inference.serving import control, repository
from inference.serving.canary_cli import add_canary, repin_routing, run_canary
from inference.serving.errors import RolloutError, ServingError
from inference.serving.registered import publish_registered
from inference.serving.settings import MODELS, ServingSettings
from runtime.model_registry import is_model_uri
from runtime.redact import install_redaction


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="streamrec-serving",
        description="Publish ranker versions into a Triton model repository and swap the served "
        "version with no failed request (explicit model control). Every flag defaults to its "
        "environment variable (in brackets).",
    )
    ServingSettings.add_flags(parser)
    commands = parser.add_subparsers(dest="command", required=True)
    publish = commands.add_parser(
        "publish",
        help="copy an artifacts directory's served model into the next version "
        "of every model (does not change what Triton serves)",
    )
    # The subcommands' own spellings of --artifacts-dir and --model: SUPPRESS leaves
    # the value of the global flag (or the environment) when they are not given.
    publish.add_argument(
        "artifacts_dir",
        metavar="artifacts",
        nargs="?",
        default=argparse.SUPPRESS,
        help="artifacts directory (default: --artifacts-dir), or a version of the MLflow "
        "model registry: models:/<name>/<version> or models:/<name>@<alias> (the server: "
        "MLFLOW_TRACKING_URI, else http://127.0.0.1:5000)",
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
            default=argparse.SUPPRESS,
            choices=MODELS,
            help="model to act on (default: the global --model)",
        )
        if name in ("rollout", "load"):
            sub.add_argument("--version", type=int, default=None, help="version to serve")
    add_canary(commands)
    return parser


def run(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    settings = ServingSettings.from_env(args=args)
    install_redaction(settings)  # the control key stays out of every log line
    if args.command == "publish":
        models = [name.strip() for name in args.models.split(",") if name.strip()]
        source = getattr(args, "artifacts_dir", None) or ""
        if is_model_uri(source):
            published = publish_registered(source, settings.repository, models)
            print(
                f"published {source} (version {published.version.version} of "
                f"{published.version.name}) as version {published.number} of "
                f"{', '.join(models)} in {settings.repository}"
            )
            return 0
        number = repository.publish(settings.artifacts_dir, settings.repository, models)
        print(
            f"published {settings.artifacts_dir} as version {number} of {', '.join(models)} "
            f"in {settings.repository}"
        )
        return 0
    triton = control.TritonControl(
        settings.http_url, control_key=settings.control_key, tls_ca=settings.tls_ca
    )
    model_dir = settings.repository / settings.model
    if args.command == "canary":
        outcome = run_canary(args, settings)
        if outcome.promoted:
            print(f"{settings.model}: canary {outcome.canary} promoted")
            return 0
        raise RolloutError(
            f"{settings.model}: canary {outcome.canary} rolled back to {outcome.champion} "
            f"in {outcome.rollback_s:.1f} s: {outcome.breach}"
        )
    if args.command in ("rollout", "load"):
        served = control.rollout(triton, model_dir, args.version, repin_routing(settings))
        print(f"{settings.model}: serving version {served}")
    elif args.command == "rollback":
        served = control.rollback(triton, model_dir, repin_routing(settings))
        print(f"{settings.model}: rolled back to version {served}")
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
