"""The shape every stack service has, so that Flink or Triton can be added as one more class."""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from jobs.localstack.settings import StackSettings


@dataclass(frozen=True)
class ServiceStatus:
    """What `status` reports for one service."""

    name: str
    running: bool
    healthy: bool
    pid: int | None
    endpoint: str
    log_path: Path
    # Its Prometheus /metrics URL; "" for a service that exports none.
    metrics: str = ""


class Service(abc.ABC):
    """One long-running process of the stack, with its own folder `<home>/<name>/`.

    The lifecycle, driven by `Stack`: ensure_installed() -> prepare() -> command()
    spawned with env() -> is_healthy() polled until True. Subclasses hold no process
    state: everything lives in files under the folder, so a new CLI invocation can
    pick up what an earlier one started.
    """

    name: str = ""
    # How long a clean shutdown may take before SIGKILL.
    stop_timeout_s: float = 10.0

    def __init__(self, settings: StackSettings) -> None:
        self.settings = settings

    @classmethod
    def instances(cls, settings: StackSettings) -> list[Service]:
        """The processes of this kind the settings ask for; one unless a kind says otherwise."""
        return [cls(settings)]

    @property
    def dir(self) -> Path:
        return self.settings.home / self.name

    @property
    def pidfile(self) -> Path:
        return self.dir / f"{self.name}.pid"

    @property
    def stdout_path(self) -> Path:
        """Where the process's stdout and stderr go (early crashes show up here)."""
        return self.dir / f"{self.name}.out"

    @property
    def log_path(self) -> Path:
        """The service's own log; by default the same file as stdout."""
        return self.stdout_path

    @property
    def marker(self) -> str:
        # Every command line we spawn names a file inside self.dir, so the folder path
        # (with trailing slash, so `/x/redis` does not match `/x/redis2`) identifies it.
        return f"{self.dir}/"

    @abc.abstractmethod
    def ensure_installed(self) -> None:
        """Make the binaries available (download, apt-get), or raise StackError saying how."""

    @abc.abstractmethod
    def prepare(self) -> None:
        """Write config files and initialise data under self.dir; must be idempotent."""

    @abc.abstractmethod
    def command(self) -> list[str]:
        """The argv to run in the foreground; argv[0] must be an absolute path."""

    def env(self) -> Mapping[str, str] | None:
        """Environment for the process; None inherits ours."""
        return None

    @abc.abstractmethod
    def ports(self) -> tuple[int, ...]:
        """The TCP ports the service binds, checked for conflicts before it starts."""

    @abc.abstractmethod
    def endpoint(self) -> str:
        """How a client reaches the service (a bootstrap string or URL)."""

    @abc.abstractmethod
    def is_healthy(self) -> bool:
        """One quick probe (a second or two at most); never raises."""

    def exports(self) -> dict[str, str]:
        """Environment variables a user would export to point clients at this service."""
        return {}

    def metrics_url(self) -> str:
        """Where Prometheus scrapes this service; "" if it exports no metrics."""
        return ""

    # Optional, hence not abstract: most services need no set-up once running.
    def after_start(self) -> None:  # noqa: B027
        """Set-up that needs the service healthy (Kafka's ACLs); runs on every `up`, so
        it must be idempotent. Raises StackError if the service cannot be used."""
