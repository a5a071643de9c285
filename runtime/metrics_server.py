"""``/metrics`` for a role's Prometheus registry, bound to loopback unless told otherwise."""

from __future__ import annotations

from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server

from schemas.metrics_ports import LOOPBACK

__all__ = ["LOOPBACK", "serve_registry"]


def serve_registry(
    registry: CollectorRegistry, port: int, addr: str = LOOPBACK
) -> WSGIServer | None:
    """Expose ``registry`` on ``addr``:``port`` (0 = do not serve).

    Loopback by default: the endpoint has no authentication, so a network sees it only
    where a deployment asks for it (the ``*_METRICS_HOST`` settings). Returns the server
    (its thread is a daemon), so a caller can read the bound address or shut it down.
    """
    if not port:
        return None
    server, _thread = start_http_server(port, addr=addr, registry=registry)
    return server
