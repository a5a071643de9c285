"""The ``canary`` subcommand of ``streamrec-serving``, and keeping the routing key in step
with a hand-made swap (``rollout``/``rollback``)."""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Callable

import redis

from inference.serving import repository
from inference.serving.canary import Guards, parse_duration_s, parse_steps
from inference.serving.canary_metrics import CanaryMetrics
from inference.serving.canary_run import Canary, Outcome, Plan, RoutingStore, pinned_routing
from inference.serving.control import TritonControl
from inference.serving.drain import Drain
from inference.serving.errors import ServingError
from inference.serving.registered import publish_registered
from inference.serving.settings import MODELS, ServingSettings
from inference.serving.worker_metrics import scrape
from runtime.metrics_server import serve_registry
from runtime.model_registry import DEFAULT_TRACKING_URI, RegistryClient, is_model_uri, tracking_uri
from runtime.online.connect import connect
from schemas.routing import routing_key


def add_canary(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    text = (
        "load VERSION beside the served one and raise its share of users step by step "
        "while its errors, p99 and scores hold against the champion's (read from the "
        "workers' /metrics); promote it (and move the registry alias) or roll back"
    )
    canary = commands.add_parser("canary", help=text, description=text)
    canary.add_argument(
        "target",
        metavar="VERSION",
        help="a published version number, or models:/<name>/<version> | models:/<name>@<alias> "
        "(published first)",
    )
    canary.add_argument("--model", default=argparse.SUPPRESS, choices=MODELS)
    canary.add_argument("--steps", default="1,5,25,50,100", help="percent of users per step")
    canary.add_argument("--hold", default="60s", help="how long each step is held (60s, 2m)")
    canary.add_argument("--poll", default="2s", help="how often the figures are read")
    canary.add_argument(
        "--settle", default="3s", help="after a routing change, before figures count"
    )
    canary.add_argument(
        "--worker-metrics",
        default="http://127.0.0.1:9108",
        help="comma-separated /metrics URLs of every worker (default: the local one)",
    )
    canary.add_argument(
        "--endpoints",
        default="",
        help="comma-separated Triton HTTP URLs of every replica (default: --url)",
    )
    guards = Guards()
    canary.add_argument("--max-error-rate", type=float, default=guards.max_error_rate)
    canary.add_argument("--max-p99-ms", type=float, default=guards.max_p99_s * 1000)
    canary.add_argument("--max-score-psi", type=float, default=guards.max_score_psi)
    canary.add_argument(
        "--metrics-port",
        type=int,
        default=0,
        help="serve streamrec_canary_breach/_share on this port while running (0 = off)",
    )
    canary.add_argument("--metrics-host", default="127.0.0.1", help="address --metrics-port binds")
    canary.add_argument(
        "--linger",
        default="120s",
        help="with --metrics-port: keep serving this long after a rollback, so the "
        "breach alert (for: 1m) fires",
    )
    canary.add_argument(
        "--registry",
        default=None,
        help="MLflow tracking URI for the alias and the outcome's tags (default: "
        "MLFLOW_TRACKING_URI; none: no registry)",
    )


def run_canary(args: argparse.Namespace, settings: ServingSettings) -> Outcome:
    try:
        plan = Plan(
            steps=parse_steps(args.steps),
            hold_s=parse_duration_s(args.hold),
            poll_s=parse_duration_s(args.poll),
            settle_s=parse_duration_s(args.settle),
            drain_timeout_s=settings.drain_timeout_s,
            ack_stale_s=settings.ack_stale_s,
            guards=Guards(
                max_error_rate=args.max_error_rate,
                max_p99_s=args.max_p99_ms / 1000,
                max_score_psi=args.max_score_psi,
            ),
        )
    except ValueError as error:
        raise ServingError(str(error)) from None
    registry_uri = args.registry if args.registry is not None else tracking_uri()
    target = args.target
    if is_model_uri(target):
        published = publish_registered(
            target, settings.repository, MODELS, registry_uri or DEFAULT_TRACKING_URI
        )
        print(f"published {target} as version {published.number}")
        target = str(published.number)
    if not target.isdigit():
        raise ServingError(f"canary {target!r}: a version number or a models:/ URI")
    urls = [u.strip() for u in (args.endpoints or settings.http_url).split(",") if u.strip()]
    tritons = [
        TritonControl(url, control_key=settings.control_key, tls_ca=settings.tls_ca) for url in urls
    ]
    workers = [u.strip() for u in args.worker_metrics.split(",") if u.strip()]
    client = connect(settings.redis_url, socket_timeout=5)
    store = RoutingStore(client, routing_key(settings.project, settings.model))
    registry = RegistryClient(registry_uri) if registry_uri else None
    metrics = CanaryMetrics()
    server = serve_registry(metrics.registry, args.metrics_port, args.metrics_host)
    try:
        outcome = Canary(
            tritons,
            settings.repository / settings.model,
            store,
            lambda: scrape(workers),
            registry,
            metrics=metrics,
        ).run(int(target), plan)
        if server is not None and outcome.breach is not None:
            time.sleep(parse_duration_s(args.linger))
        return outcome
    except redis.RedisError as error:
        raise ServingError(f"routing key in {settings.redis_url}: {error}") from None
    finally:
        if server is not None:
            server.shutdown()


def repin_routing(settings: ServingSettings) -> Callable[[int], None]:
    """Before a swap unloads the old version: a routing key of the model, if there is one
    (a canary leaves its winner pinned), moves to the new version, and the swap waits
    until every worker has acknowledged it (inference/serving/drain.py), or the workers
    that ask for the old one by name would get errors. Without Redis it can only warn."""
    drain = Drain(settings.drain_timeout_s, settings.ack_stale_s, settings.drain_fallback_s)

    def repin(version: int) -> None:
        client = connect(settings.redis_url, socket_timeout=5, socket_connect_timeout=5)
        key = routing_key(settings.project, settings.model)
        try:
            if client.exists(key):
                model_dir = settings.repository / settings.model
                revision = int(time.time())
                routing = pinned_routing(model_dir, version, revision, f"swapped to {version}")
                others = set(repository.versions(model_dir)) - {version}
                drained = RoutingStore(client, key).retire(routing, others, drain)
                logging.getLogger(__name__).info("pinned %d: %s", version, drained.line())
        except redis.RedisError as error:
            logging.getLogger(__name__).warning(
                "routing key %s not read (%s): workers it pins to the old version will fall "
                "back until it is set (python -m inference.serving canary pins it)",
                key,
                error,
            )
        finally:
            client.close()

    return repin
