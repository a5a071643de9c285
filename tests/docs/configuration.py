"""Write the configuration reference (``docs/configuration.md``) from the roles' own parsers.

``python -m tests.docs.configuration > docs/configuration.md`` (``make docs``). Each role's
command (``[project.scripts]`` in ``pyproject.toml``, plus the module commands in
:data:`MODULE_COMMANDS`) is started with ``--help`` and stopped at the moment it parses
its arguments, so what is listed is the parser the role really builds: every flag, with
the ``STREAMREC_*`` variable and the default that :meth:`Settings.add_flags` wrote into
its help, and the plain flags with argparse's default. Variables a role reads outside its
settings object are in :data:`OTHER_VARIABLES`; ``tests/docs/test_configuration.py``
fails when the committed page differs from this output or when the code names a
``STREAMREC_*`` variable that the page does not.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
import tomllib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "STREAMREC_"
# `[VARIABLE, default VALUE]`: the tail Settings.add_flags gives every flag's help.
SETTING_HELP = re.compile(
    r"^(?P<help>.*?)\s*\[(?P<env>STREAMREC_[A-Z0-9_]+), default (?P<default>.*)\]$", re.S
)
# A variable read by this many roles or more is listed once, under "Shared".
SHARED_BY = 3

# Commands that are not console scripts but that a user runs (module, what it is).
MODULE_COMMANDS = (("inference.worker.inventory", "mark items out of stock for the worker"),)

# Settings objects a command reads from the environment only (no flags): command, class.
ENVIRONMENT_ONLY = (("streamrec-stack", "jobs.localstack.settings:StackSettings"),)

# Variables read outside a role's settings object: (variable, who reads it, meaning).
OTHER_VARIABLES = (
    (
        "STREAMREC_DATA_DIR",
        "datasets, tests, benchmarks",
        "folder holding `taobao/` and `movielens-latest-small/` (default `../shared/data`)",
    ),
    (
        "STREAMREC_TRITON_URL",
        "demo, eval-online",
        "a running Triton's gRPC `host:port` to use instead of starting one (the worker's "
        "own setting too)",
    ),
    (
        "STREAMREC_CANARY_METRICS_PORT",
        "`make observe`",
        "where the local Prometheus scrapes a running canary (`streamrec-serving canary "
        "--metrics-port`, default 9110)",
    ),
    (
        "STREAMREC_FLINK_REST_URL",
        "exported by `streamrec-stack up` / `env`",
        "the local Flink cluster's REST API and web UI",
    ),
    ("STREAMREC_PROMETHEUS_URL", "exported by `streamrec-stack observe`", "the local Prometheus"),
    (
        "STREAMREC_FEAST_REDIS_TYPE",
        "`feature_repo/feature_store.yaml`",
        "`redis` or `redis_cluster`, derived from `STREAMREC_REDIS_URL` by `feast_env`",
    ),
    (
        "STREAMREC_RESULTS_FILE",
        "`make RECORD=1 <target>` (`tests/results.py`)",
        "the results file a recorded run appends to (default `docs/results.jsonl`)",
    ),
    (
        "STREAMREC_FEAST_REDIS",
        "`feature_repo/feature_store.yaml`",
        "Feast's Redis connection string, derived from `STREAMREC_REDIS_URL` by `feast_env`",
    ),
    (
        "STREAMREC_FEAST_REGISTRY",
        "`feature_repo/feature_store.yaml`",
        "Feast's registry file, derived by `feast_env` (under the stack home)",
    ),
    (
        "STREAMREC_TEST_KAFKA_BOOTSTRAP_SERVERS",
        "tests",
        "run the integration tests against this Kafka instead of one they start",
    ),
    ("STREAMREC_TEST_REDIS_URL", "tests", "run the integration tests against this Redis"),
    ("STREAMREC_FUZZ_EXAMPLES", "tests", "codec fuzz inputs per kind (`make test` 2,500)"),
    (
        "STREAMREC_FUZZ_INTEGRATION_INPUTS",
        "tests",
        "poison inputs sent through the running worker and feature job",
    ),
)


@dataclass(frozen=True)
class Option:
    """One flag of one command, with the variable it also reads (if any)."""

    flags: str
    env: str | None
    default: str
    help: str


@dataclass(frozen=True)
class Command:
    name: str
    role: str
    how: str
    description: str
    options: tuple[Option, ...]


class _Parsed(Exception):
    """Raised instead of parsing: carries the parser the command built."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__(parser.prog)
        self.parser = parser


def capture_parser(main: Callable[..., object], argv: Sequence[str]) -> argparse.ArgumentParser:
    """The parser ``main(argv)`` builds, stopped before it parses anything."""

    def stop(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        raise _Parsed(self)

    with (
        mock.patch.object(argparse.ArgumentParser, "parse_args", stop),
        mock.patch.object(argparse.ArgumentParser, "parse_known_args", stop),
    ):
        try:
            main(list(argv))
        except _Parsed as parsed:
            return parsed.parser
    raise RuntimeError(f"{main.__module__}.main returned without parsing its arguments")


class _Flagless(argparse.ArgumentParser):
    """Collects a settings class's flags as variables only (the command takes no such flag)."""

    def __init__(self) -> None:
        super().__init__(add_help=False)
        self.settings_actions: list[argparse.Action] = []

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        action.option_strings = []
        action.metavar = "(variable only)"
        self.settings_actions.append(action)
        return action


def _text(value: object) -> str:
    if value is None or value is argparse.SUPPRESS:
        return "none"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value) or "none"
    return str(value) if value != "" else "''"


def _prose(text: str | None) -> str:
    """Help text on one line, reST's double backticks as Markdown's, ending with a stop."""
    line = " ".join((text or "").split()).replace("``", "`").replace("%%", "%")
    return line + "." if line and line[-1] not in ".:" else line


def options(parser: argparse.ArgumentParser) -> Iterator[Option]:
    """Every argument of ``parser`` (not its subcommands'); positionals as ``<name>``."""
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        found = SETTING_HELP.match(" ".join((action.help or "").split()))
        if not action.option_strings and found and action.metavar == "(variable only)":
            yield Option("(variable only)", found["env"], found["default"], _prose(found["help"]))
            continue
        if not action.option_strings:
            name = action.metavar or action.dest
            required = action.nargs not in ("?", "*")
            default = "required" if required else _text(action.default)
            yield Option(f"`<{name}>`", None, default, _prose(action.help))
            continue
        text = " ".join((action.help or "").split())
        flags = ", ".join(f"`{flag}`" for flag in action.option_strings)
        found = SETTING_HELP.match(text)
        if found:
            yield Option(flags, found["env"], found["default"], _prose(found["help"]))
        else:
            stored_true = isinstance(action, argparse._StoreTrueAction)
            yield Option(flags, None, "off" if stored_true else _text(action.default), _prose(text))


def subcommands(
    parser: argparse.ArgumentParser,
) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """``(name, help, parser)`` of each subcommand."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, subparser in action.choices.items():
                yield name, helps.get(name, ""), subparser


def commands() -> list[Command]:
    """Every role's command and subcommand, in ``pyproject.toml``'s order."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    found: list[Command] = []
    entries = [(name, target) for name, target in scripts.items()]
    entries += [(f"python -m {module}", f"{module}:main") for module, _ in MODULE_COMMANDS]
    for name, target in entries:
        module, _, function = target.partition(":")
        main = getattr(importlib.import_module(module), function)
        parser = capture_parser(main, ["--help"])
        for command, path in ENVIRONMENT_ONLY:
            if command == name:
                holder, _, cls = path.partition(":")
                collected = _Flagless()
                getattr(importlib.import_module(holder), cls).add_flags(collected)
                parser._actions += collected.settings_actions
        how = f"python -m {module.removesuffix('.__main__').removesuffix('.cli')}"
        described = _prose(parser.description)
        found.append(Command(name, name, f"`{how}`", described, tuple(options(parser))))
        for sub, text, subparser in subcommands(parser):
            described = _prose(subparser.description or text)
            subcommand = Command(
                f"{name} {sub}", name, f"`{how} {sub}`", described, tuple(options(subparser))
            )
            found.append(subcommand)
    return found


def _row(*cells: str) -> str:
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def _anchor(name: str) -> str:
    return re.sub(r"[^a-z0-9 -]", "", name.lower()).replace(" ", "-")


def shared_variables(found: list[Command]) -> dict[str, tuple[Option, list[str]]]:
    """Variables read by :data:`SHARED_BY` roles or more: the first option and the roles."""
    readers: dict[str, tuple[Option, list[str]]] = {}
    for command in found:
        role = command.role
        for option in command.options:
            if option.env is None:
                continue
            _, roles = readers.setdefault(option.env, (option, []))
            if role not in roles:
                roles.append(role)
    return {env: seen for env, seen in sorted(readers.items()) if len(seen[1]) >= SHARED_BY}


def _table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> list[str]:
    return [_row(*header), _row(*("---" for _ in header)), *(_row(*row) for row in rows)]


def _section(command: Command, shared: dict[str, tuple[Option, list[str]]]) -> list[str]:
    level = "##" if command.name == command.role else "###"
    run = f"Run as {command.how}."
    blocks = [[f"{level} `{command.name}`"], [f"{command.description} {run}".strip()]]
    own = [o for o in command.options if o.env is not None and o.env not in shared]
    if own:
        header = ("variable", "flag", "default", "meaning")
        blocks.append(
            _table(header, [(f"`{o.env}`", o.flags, f"`{o.default}`", o.help) for o in own])
        )
    plain = [o for o in command.options if o.env is None]
    if plain:
        rows = [(o.flags, f"`{o.default}`", o.help) for o in plain]
        blocks.append(_table(("argument (no variable)", "default", "meaning"), rows))
    also = sorted({o.env for o in command.options if o.env is not None and o.env in shared})
    if also:
        blocks.append(["Also reads the shared " + ", ".join(f"`{env}`" for env in also) + "."])
    return ["\n".join(block) for block in blocks]


def render(found: list[Command]) -> str:
    shared = shared_variables(found)
    roles = [f"[`{c.name}`](#{_anchor(c.name)})" for c in found if c.name == c.role]
    shared_rows = [
        (f"`{env}`", o.flags, f"`{o.default}`", o.help, ", ".join(readers))
        for env, (o, readers) in shared.items()
    ]
    blocks = [
        "# Configuration",
        "<!-- Generated by `make docs` (python -m tests.docs.configuration); edit the settings,\n"
        "not this page: tests/docs/test_configuration.py fails when it is stale. -->",
        "Every role reads its settings from `STREAMREC_*` environment variables, and a flag\n"
        "given on its command line wins over the variable; `--help` on any command prints the\n"
        "same list. Settings that hold secrets (passwords in URLs, credential-like Kafka\n"
        "properties) are masked in every log line; each role logs the rest at start. Lists\n"
        "are comma-separated; `name=value,...` properties take `\\,` for a comma in a value.",
        "Commands: " + ", ".join(roles) + ".",
        "## Shared by several roles",
        "Read the same way by every role listed; their sections below leave them out.",
        "\n".join(_table(("variable", "flag", "default", "meaning", "read by"), shared_rows)),
    ]
    for command in found:
        blocks += _section(command, shared)
    others = [(f"`{env}`", who, meaning) for env, who, meaning in OTHER_VARIABLES]
    blocks += ["## Read outside a role's settings"]
    blocks += ["\n".join(_table(("variable", "read by", "meaning"), others))]
    return "\n\n".join(blocks) + "\n"


def clean_environment() -> None:
    """Defaults as a fresh shell sees them: no STREAMREC_* variable set, the repo as cwd."""
    for name in [n for n in os.environ if n.startswith(PREFIX)]:
        del os.environ[name]
    os.chdir(ROOT)


def page() -> str:
    saved, cwd = dict(os.environ), Path.cwd()
    try:
        clean_environment()
        return render(commands())
    finally:
        os.environ.clear()
        os.environ.update(saved)
        os.chdir(cwd)


def main() -> int:
    sys.stdout.write(page())
    return 0


if __name__ == "__main__":
    sys.exit(main())
