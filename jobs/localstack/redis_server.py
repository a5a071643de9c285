"""A throwaway Redis (the Feast online store) from the system's redis-server binary."""

from __future__ import annotations

from pathlib import Path

import redis

from jobs.localstack import binaries
from jobs.localstack.service import Service
from jobs.localstack.settings import HOST, StackSettings

REDIS_MAXMEMORY = "2gb"


def render_redis_conf(settings: StackSettings, data_dir: Path) -> str:
    """Config for a loopback-only instance that stays in the foreground and keeps its data."""
    lines = [
        "# Written by jobs.localstack on every start; edits are overwritten.",
        f"port {settings.redis_port}",
        f"bind {HOST}",
        f'dir "{data_dir}"',
        # The online store survives a Redis restart: nothing rebuilds it from Kafka (the
        # writer's offsets are committed), and the out-of-stock set lives only here.
        # With `always`, Redis writes and fsyncs the AOF before it replies, so neither a
        # killed process nor a crashed machine loses an acknowledged write. `everysec`
        # postpones the write itself (up to 2 s) while an fsync is in flight, and a kill
        # -9 on a loaded box then lost an out-of-stock mark Redis had acknowledged. The
        # cost is one fsync per event-loop pass that wrote (0.35 ms on this box's disk).
        'save ""',
        "appendonly yes",
        "appendfsync always",
        # Bounded: feature rows and co-visitation sets carry TTLs, so at the limit the
        # least recently used of them go first; the out-of-stock set has none and stays.
        f"maxmemory {REDIS_MAXMEMORY}",
        "maxmemory-policy volatile-lru",
        "daemonize no",
        # Log to stdout, which the stack manager sends to redis.log.
        'logfile ""',
        # Keep argv (it names this config file) so the pid guard can recognise us.
        "set-proc-title no",
    ]
    return "\n".join(lines) + "\n"


class RedisService(Service):
    name = "redis"

    def __init__(self, settings: StackSettings) -> None:
        super().__init__(settings)
        self.conf = self.dir / "redis.conf"
        self._binary: str | None = None

    @property
    def stdout_path(self) -> Path:
        return self.dir / "redis.log"

    def ports(self) -> tuple[int, ...]:
        return (self.settings.redis_port,)

    def endpoint(self) -> str:
        return self.settings.redis_url

    def exports(self) -> dict[str, str]:
        return {"STREAMREC_REDIS_URL": self.settings.redis_url}

    def ensure_installed(self) -> None:
        self._binary = binaries.ensure_redis_server()

    def prepare(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.conf.write_text(render_redis_conf(self.settings, self.dir))

    def command(self) -> list[str]:
        binary = self._binary or binaries.ensure_redis_server()
        return [binary, str(self.conf)]

    def is_healthy(self) -> bool:
        client = redis.Redis(
            host=HOST, port=self.settings.redis_port, socket_timeout=1, socket_connect_timeout=1
        )
        try:
            return client.ping() is True
        except redis.RedisError:
            return False
        finally:
            client.close()
