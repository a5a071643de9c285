"""The quick part of ``make security-check``: the secured stack refuses every way in.

Kafka, Redis and Triton start in the secured mode on free ports; every stranger and
every role overstepping its grants is tried; the stack's sockets and the files it
wrote are checked. The demo's round trip through it is ``make security-check``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from jobs.localstack import Stack, StackSettings
from tests.inference.serving.artifacts import write_serving_artifacts
from tests.security.check import (
    ListenerWatch,
    leaks,
    probes,
    secured_settings,
    stack_pids,
    stack_up,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[StackSettings, Stack]]:
    root = tmp_path_factory.mktemp("security")
    settings = secured_settings(root / "home")
    stack = stack_up(settings, write_serving_artifacts(root / "artifacts"))
    try:
        yield settings, stack
    finally:
        stack.down()


def test_every_stranger_and_every_overstepping_role_is_refused(
    secured: tuple[StackSettings, Stack],
) -> None:
    attempts = probes(secured[0])
    assert {probe.kind for probe in attempts} == {"unauthenticated", "acl"}
    accepted = [f"{probe.name}: {probe.detail}" for probe in attempts if probe.accepted]
    assert accepted == []


def test_the_stack_listens_on_loopback_only(secured: tuple[StackSettings, Stack]) -> None:
    watch = ListenerWatch(stack_pids(secured[1]))
    watch.sample()
    ports = {item.port for item in watch.seen.values()}
    settings = secured[0]
    assert {settings.kafka_port, settings.redis_port, settings.triton_grpc_port} <= ports
    assert watch.exposed() == []


def test_no_secret_in_anything_the_stack_wrote(secured: tuple[StackSettings, Stack]) -> None:
    read, found = leaks(secured[0], [])
    assert read > 0
    assert [leak.where for leak in found] == []
