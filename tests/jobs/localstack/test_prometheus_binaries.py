"""Finding or fetching Prometheus's programs, the lookups and apt replaced (nothing fetched)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.localstack.errors import StackError
from jobs.localstack.prometheus_binaries import FetchPlan, Runner, ensure_program, fetch_plan


def test_the_plan_uses_what_is_there_and_downloads_only_where_it_may() -> None:
    assert fetch_plan("/usr/bin/promtool", False, False, False) is FetchPlan.USE
    assert fetch_plan(None, False, True, True) is FetchPlan.GIVE_UP
    assert fetch_plan(None, True, True, False) is FetchPlan.DOWNLOAD
    assert fetch_plan(None, True, False, True) is FetchPlan.UPDATE_AND_DOWNLOAD
    assert fetch_plan(None, True, False, False) is FetchPlan.GIVE_UP


def fake_apt(calls: list[list[str]]) -> Runner:
    """Records commands; `apt-get download` leaves a .deb, `dpkg-deb -x` unpacks both programs."""

    def run(argv: list[str], cwd: Path) -> None:
        calls.append(argv)
        if argv[:2] == ["apt-get", "download"]:
            (cwd / "prometheus_2.42.0_amd64.deb").write_bytes(b"deb")
        if argv[:2] == ["dpkg-deb", "-x"]:
            for name in ("prometheus", "promtool"):
                binary = cwd / argv[3] / "usr" / "bin" / name
                binary.parent.mkdir(parents=True, exist_ok=True)
                binary.write_text("#!/bin/sh\n")
                binary.chmod(0o755)
            (cwd / argv[3] / "etc" / "prometheus").mkdir(parents=True)

    return run


def missing(name: str) -> str | None:
    return None if name in ("prometheus", "promtool") else f"/usr/bin/{name}"


def test_ensure_fetches_debians_package_into_the_cache_once_for_both_programs(
    tmp_path: Path,
) -> None:
    calls: list[list[str]] = []
    cache, absent = tmp_path / "cache", tmp_path / "absent"
    path = ensure_program(
        "prometheus", which=missing, is_root=True, has_lists=False, run=fake_apt(calls),
        cache=cache, system=absent,
    )  # fmt: skip
    assert path == str(cache / "usr" / "bin" / "prometheus")
    assert [c[:2] for c in calls] == [
        ["apt-get", "update"],
        ["apt-get", "download"],
        ["dpkg-deb", "-x"],
    ]
    # Only the programs stay: no .deb, no service files.
    assert sorted(p.name for p in cache.iterdir()) == ["usr"]
    again = ensure_program("promtool", which=missing, run=fake_apt(calls), cache=cache,
                           system=absent)  # fmt: skip
    assert again == str(cache / "usr" / "bin" / "promtool") and len(calls) == 3


def test_a_program_on_path_wins_and_nothing_is_fetched(tmp_path: Path) -> None:
    calls: list[list[str]] = []
    found = ensure_program("promtool", which=lambda name: f"/opt/bin/{name}", run=fake_apt(calls),
                           cache=tmp_path)  # fmt: skip
    assert found == "/opt/bin/promtool" and calls == []


def test_ensure_says_how_to_install_it_where_it_may_not(tmp_path: Path) -> None:
    with pytest.raises(StackError, match="apt-get install"):
        ensure_program(
            "prometheus", which=missing, is_root=False, has_lists=False, run=fake_apt([]),
            cache=tmp_path / "cache", system=tmp_path / "absent",
        )  # fmt: skip
    with pytest.raises(ValueError, match="not in the prometheus package"):
        ensure_program("grafana", cache=tmp_path)
