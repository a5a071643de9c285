"""Where each part serves its Prometheus metrics (a contract: no Prometheus client needed).

Each port is the default of that part's ``*_METRICS_PORT`` setting, and what
docker/prometheus/prometheus.yml and the local stack's Prometheus (``make observe``)
scrape. Loopback unless a deployment says otherwise: the endpoints have no
authentication.
"""

from __future__ import annotations

LOOPBACK = "127.0.0.1"
METRICS_PORTS = {"worker": 9108, "drift": 9109, "canary": 9110, "outcome": 9111, "writer": 9112}
