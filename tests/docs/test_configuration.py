"""docs/configuration.md is what the roles' parsers say, and names every variable the code reads."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from tests.docs import configuration

PAGE = configuration.ROOT / "docs" / "configuration.md"
PRODUCT = ("schemas", "runtime", "jobs", "inference", "feature_repo")
# A variable's name in code or config: STREAMREC_ then capitals, digits and underscores.
NAME = re.compile(r"\bSTREAMREC_[A-Z0-9_]*[A-Z0-9]\b")


def test_the_committed_page_is_current() -> None:
    assert PAGE.read_text() == configuration.page(), (
        "docs/configuration.md is stale: run `make docs`"
    )


def test_every_variable_the_product_names_is_on_the_page() -> None:
    text = PAGE.read_text()
    named: set[str] = set()
    for package in PRODUCT:
        for path in (configuration.ROOT / package).rglob("*"):
            if path.suffix in (".py", ".yaml") and path.is_file():
                named |= set(NAME.findall(path.read_text()))
    missing = sorted(name for name in named if f"`{name}`" not in text)
    assert missing == []


def test_a_settings_flag_is_read_with_its_variable_and_default() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", help="requests a second [STREAMREC_X_RATE, default 50]")
    parser.add_argument("--verbose", action="store_true", help="say more")
    found = list(configuration.options(parser))
    assert found[0] == configuration.Option(
        "`--rate`", "STREAMREC_X_RATE", "50", "requests a second."
    )
    assert found[1] == configuration.Option("`--verbose`", None, "off", "say more.")


def test_the_parser_is_taken_before_anything_runs(tmp_path: Path) -> None:
    ran: list[str] = []

    def main(argv: list[str]) -> int:
        parser = argparse.ArgumentParser(prog="x")
        parser.add_argument("--flag")
        parser.parse_args(argv)
        ran.append("after parsing")
        return 0

    assert configuration.capture_parser(main, ["--help"]).prog == "x"
    assert ran == []
