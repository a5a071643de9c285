"""Each role's install (base dependencies + its extra) covers what the role's code imports.

An image installs ``.[<role extras>]`` only; a module the role imports from a
distribution that neither the base dependencies nor the role's extra declares works
in the development environment (which has every extra) and fails in the image. So
the role's modules are walked statically (ast), transitively through the repository,
every third-party top-level module is mapped to its distributions, and each must be
declared in pyproject.toml.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LOCAL = ("schemas", "runtime", "jobs", "inference", "feature_repo")


@dataclass(frozen=True)
class Role:
    package: str  # every module under it is part of the role
    extras: tuple[str, ...]  # the pyproject extras an install of the role names


ROLES = {
    "worker": Role("inference.worker", ("worker",)),
    "writer": Role("jobs.feature_writer", ("writer",)),
    "features": Role("jobs.features", ("flink",)),
    "drift": Role("jobs.drift", ("drift",)),
    "serving": Role("inference.serving", ("serving",)),
    "train": Role("jobs.ranker", ("train",)),
    "replay": Role("jobs.replay", ()),
    # Trains and canaries in processes of their own: an install of it holds both roles.
    "retrain": Role("jobs.retrain", ("train", "serving")),
    "outcome": Role("jobs.outcomes", ("outcome",)),
    # The stack manager starts Flink from the apache-flink wheel: it needs that extra.
    "stack": Role("jobs.localstack", ("flink",)),
}
# The roles whose commands compose and k8s run in each image.
IMAGE_ROLES = {
    "app.Dockerfile": ("worker", "writer", "drift", "outcome", "replay"),
    "flink.Dockerfile": ("features",),
}


def normalize(name: str) -> str:
    """PEP 503: ``Feast_Redis`` and ``feast-redis`` are one distribution."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match, requirement
    return normalize(match.group(1))


@cache
def project() -> dict[str, object]:
    loaded: dict[str, object] = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return loaded


def declared(extras: tuple[str, ...]) -> set[str]:
    """Distributions the base dependencies and ``extras`` name."""
    base = project()["dependencies"]
    optional = project()["optional-dependencies"]
    assert isinstance(base, list) and isinstance(optional, dict)
    unknown = set(extras) - set(optional)
    assert not unknown, f"pyproject.toml has no extra {sorted(unknown)}"
    names = {requirement_name(r) for r in base}
    for extra in extras:
        names |= {requirement_name(r) for r in optional[extra]}
    return names


def module_file(name: str) -> Path | None:
    """The repository file of module ``name`` (None: not one of the repository's)."""
    base = REPO.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def package_modules(package: str) -> list[str]:
    root = REPO.joinpath(*package.split("."))
    return [
        ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        for path in sorted(root.rglob("*.py"))
    ]


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    """Absolute names imported anywhere in ``tree`` (lazy imports too: they run when used)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _type_checking_only(node):
            yield from (n for item in node.orelse for n in _imports(item, module, is_package))
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = module.split(".")
                keep = len(parts) - node.level + (1 if is_package else 0)
                base = ".".join(parts[:keep] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            yield base
            # ``from pkg import sub`` may name a submodule.
            yield from (f"{base}.{alias.name}" for alias in node.names)
        yield from _imports(node, module, is_package)


@cache
def direct_imports(module: str) -> frozenset[str]:
    path = module_file(module)
    assert path is not None, module
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return frozenset(_imports(tree, module, path.name == "__init__.py"))


def third_party_imports(package: str) -> dict[str, set[str]]:
    """Third-party top-level module -> the repository modules that import it."""
    seen: set[str] = set()
    todo = package_modules(package)
    found: dict[str, set[str]] = {}
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        # Importing a.b.c runs a/__init__.py and a/b/__init__.py first.
        parts = module.split(".")
        todo += [
            ".".join(parts[:i]) for i in range(1, len(parts)) if module_file(".".join(parts[:i]))
        ]
        for name in direct_imports(module):
            top = name.split(".")[0]
            if top in LOCAL:
                if module_file(name):
                    todo.append(name)
            elif top and top not in sys.stdlib_module_names and top != "__future__":
                found.setdefault(top, set()).add(module)
    return found


def missing_for(role: Role) -> list[str]:
    allowed = declared(role.extras)
    distributions = packages_distributions()
    problems = []
    for top, importers in sorted(third_party_imports(role.package).items()):
        dists = {normalize(d) for d in distributions.get(top, [])}
        where = ", ".join(sorted(importers)[:3])
        if not dists:
            problems.append(f"{top} (imported by {where}) belongs to no installed distribution")
        elif not dists & allowed:
            problems.append(f"{top} (distribution {'/'.join(sorted(dists))}, imported by {where})")
    return problems


@pytest.mark.parametrize("role", sorted(ROLES))
def test_every_third_party_import_is_declared_for_the_role(role: str) -> None:
    spec = ROLES[role]
    problems = missing_for(spec)
    extras = "+".join(spec.extras) or "no extra"
    assert not problems, (
        f"role {role} ({spec.package}) installs the base dependencies + {extras}, "
        "which do not declare:\n  " + "\n  ".join(problems)
    )


def test_the_walk_sees_lazy_and_transitive_imports() -> None:
    found = third_party_imports("inference.worker")
    assert "inference.worker.scoring" in found["onnxruntime"]  # inside a function
    assert "schemas.online.feast_format" in found["mmh3"]  # through schemas


def test_a_missing_distribution_is_reported_by_name() -> None:
    problems = missing_for(Role("jobs.drift", ()))
    assert any(p.startswith("evidently (distribution evidently") for p in problems), problems


def image_extras(dockerfile: str) -> set[str]:
    """The extras ``pip install ".[a,b]"`` names (an ``ARG EXTRAS=`` default stands in)."""
    text = (REPO / "docker" / dockerfile).read_text(encoding="utf-8")
    arg = re.search(r"^ARG EXTRAS=(\S+)$", text, re.M)
    text = text.replace("${EXTRAS}", arg.group(1) if arg else "")
    match = re.search(r"pip install [^\n]*\"\.\[([^\]]*)\]\"", text)
    assert match, f"docker/{dockerfile}: no pip install of the project with extras"
    return set(match.group(1).split(","))


@pytest.mark.parametrize("dockerfile", sorted(IMAGE_ROLES))
def test_each_image_installs_the_extras_of_its_roles(dockerfile: str) -> None:
    needed = {extra for role in IMAGE_ROLES[dockerfile] for extra in ROLES[role].extras}
    missing = needed - image_extras(dockerfile)
    assert not missing, f"docker/{dockerfile} lacks the extras {sorted(missing)}"
