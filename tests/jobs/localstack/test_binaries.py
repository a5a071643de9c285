from pathlib import Path

import pytest

from jobs.localstack import StackError
from jobs.localstack.binaries import (
    RedisPlan,
    ensure_redis_server,
    find_java,
    find_mvn,
    redis_plan,
)


@pytest.mark.parametrize(
    ("found", "is_root", "has_apt", "plan"),
    [
        ("/usr/bin/redis-server", False, False, RedisPlan.USE),
        ("/usr/bin/redis-server", True, True, RedisPlan.USE),
        (None, True, True, RedisPlan.APT_INSTALL),
        (None, False, True, RedisPlan.GIVE_UP),
        (None, True, False, RedisPlan.GIVE_UP),
    ],
)
def test_redis_plan(found: str | None, is_root: bool, has_apt: bool, plan: RedisPlan) -> None:
    assert redis_plan(found, is_root, has_apt) is plan


class FakeSystem:
    """PATH lookups and apt-get runs, where apt-get install makes redis-server appear."""

    def __init__(self, redis: bool, apt: bool) -> None:
        self.paths = {"apt-get": "/usr/bin/apt-get"} if apt else {}
        if redis:
            self.paths["redis-server"] = "/opt/bin/redis-server"
        self.ran: list[list[str]] = []

    def which(self, name: str) -> str | None:
        return self.paths.get(name)

    def run(self, argv: list[str]) -> None:
        self.ran.append(argv)
        if argv[:2] == ["apt-get", "install"]:
            self.paths["redis-server"] = "/usr/bin/redis-server"


def test_present_redis_is_used_without_installing(tmp_path: Path) -> None:
    system = FakeSystem(redis=True, apt=True)
    found = ensure_redis_server(system.which, True, system.run, fallback=tmp_path / "none")
    assert found == "/opt/bin/redis-server"
    assert system.ran == []


def test_missing_redis_is_installed_with_apt_as_root(tmp_path: Path) -> None:
    system = FakeSystem(redis=False, apt=True)
    found = ensure_redis_server(system.which, True, system.run, fallback=tmp_path / "none")
    assert found == "/usr/bin/redis-server"
    assert system.ran == [
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "redis-server"],
    ]


def test_missing_redis_without_root_says_what_to_install(tmp_path: Path) -> None:
    system = FakeSystem(redis=False, apt=True)
    with pytest.raises(StackError, match="apt-get install -y redis-server"):
        ensure_redis_server(system.which, False, system.run, fallback=tmp_path / "none")
    assert system.ran == []


def test_redis_outside_path_is_found_at_the_debian_location(tmp_path: Path) -> None:
    binary = tmp_path / "redis-server"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    system = FakeSystem(redis=False, apt=False)
    assert ensure_redis_server(system.which, False, system.run, fallback=binary) == str(binary)


def test_java_home_wins_over_path(tmp_path: Path) -> None:
    java = tmp_path / "bin" / "java"
    java.parent.mkdir()
    java.write_text("#!/bin/sh\n")
    java.chmod(0o755)
    assert find_java({"JAVA_HOME": str(tmp_path)}, lambda _: "/usr/bin/java") == str(java)
    with pytest.raises(StackError, match="JAVA_HOME"):
        find_java({"JAVA_HOME": str(tmp_path / "nope")}, lambda _: "/usr/bin/java")


def test_missing_java_and_maven_say_what_to_install() -> None:
    with pytest.raises(StackError, match="openjdk-17-jre-headless"):
        find_java({}, lambda _: None)
    with pytest.raises(StackError, match="apt-get install -y maven"):
        find_mvn(lambda _: None)
    assert find_java({}, lambda _: "/x/java") == "/x/java"
