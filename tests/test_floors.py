"""The import floors of ARCHITECTURE.md, read from the code with ``ast`` (not grep).

Contracts (``schemas``) at the bottom import nothing of the project's; the shared
runtime (``runtime``) imports contracts and no stage; stages import both, and no stage
imports another stage (the dataset adapters, ``jobs.datasets``, are a library the
stages share); only the local stack manager itself and the demo on top of it import
``jobs.localstack``; no product code imports ``tests``. Imports inside functions count
too (``ast.walk`` sees every one).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("schemas", "runtime", "jobs", "inference", "feature_repo")


@dataclass(frozen=True)
class Rule:
    """Modules under ``source`` must not import modules under any of ``forbidden``."""

    source: str
    forbidden: tuple[str, ...]
    exempt: tuple[str, ...] = ()

    def applies_to(self, module: str) -> bool:
        return _under(module, self.source) and not any(_under(module, e) for e in self.exempt)


# Each stage: one deployable role's package. On top of them, the local stack manager,
# the demo and the online evaluation may import stages; below them, jobs.datasets.
STAGES = (
    "jobs.features",
    "jobs.feature_writer",
    "jobs.drift",
    "jobs.ranker",
    "jobs.replay",
    "jobs.retrain",
    "jobs.outcomes",
    "inference.worker",
    "inference.serving",
    "inference.model_repository",
    "feature_repo",
)
ON_TOP = ("jobs.localstack", "jobs.demo", "jobs.evaluate")
SHARED = ("jobs.datasets",)


def _no_stage_imports_another() -> tuple[Rule, ...]:
    return tuple(
        Rule(stage, tuple(s for s in (*STAGES, *ON_TOP) if s != stage)) for stage in STAGES
    )


RULES = (
    Rule("schemas", ("runtime", "jobs", "inference", "feature_repo", "tests")),
    Rule("runtime", ("jobs", "inference", "feature_repo", "tests")),
    Rule("jobs.datasets", (*STAGES, *ON_TOP, "tests")),
    *_no_stage_imports_another(),
    Rule("inference", ("jobs", "feature_repo", "tests")),
    Rule("feature_repo", ("jobs", "inference", "tests")),
    Rule("jobs", ("jobs.localstack", "tests"), exempt=("jobs.localstack", "jobs.demo")),
    Rule("jobs.localstack", ("tests",)),
    Rule("jobs.demo", ("tests",)),
    Rule("jobs.evaluate", ("tests",)),
)


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> Iterator[tuple[int, str]]:
    """``(line, imported module)`` of every absolute import in a file."""
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module
            # `from jobs import localstack` imports jobs.localstack.
            yield from ((node.lineno, f"{node.module}.{a.name}") for a in node.names)


def violations(root: Path, packages: tuple[str, ...] = PRODUCT) -> list[str]:
    """One ``file:line imports module`` per import statement that breaks a rule."""
    found: dict[str, str] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            module = module_name(root, path)
            for line, imported in imports(path):
                for rule in RULES:
                    hit = any(_under(imported, f) for f in rule.forbidden)
                    if rule.applies_to(module) and hit:
                        found.setdefault(f"{path.relative_to(root)}:{line}", imported)
    return [f"{where} imports {imported}" for where, imported in sorted(found.items())]


def test_the_product_keeps_its_floors() -> None:
    assert violations(ROOT) == []


@pytest.mark.parametrize(
    ("where", "line"),
    [
        ("inference/worker/x.py", "from jobs.feature_writer import rows"),
        ("jobs/features/x.py", "import jobs.localstack.stack"),
        ("jobs/drift/x.py", "from jobs import localstack"),
        ("schemas/x.py", "from inference.worker import features"),
        ("jobs/ranker/x.py", "def f():\n    from inference.serving import probe\n"),
        ("feature_repo/definitions.py", "from jobs.feature_writer import rows"),
        ("jobs/drift/x.py", "from jobs.features.settings import FeatureJobSettings"),
        ("jobs/ranker/x.py", "def f():\n    from jobs.replay.run import run_replay\n"),
        ("inference/serving/x.py", "from inference.worker.settings import WorkerSettings"),
        ("runtime/x.py", "from jobs.features import reference"),
        ("schemas/x.py", "from runtime.settings import Settings"),
        ("jobs/datasets/x.py", "from jobs.ranker import events"),
    ],
)
def test_a_wrong_arrow_is_caught(tmp_path: Path, where: str, line: str) -> None:
    path = tmp_path / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(line + "\n")
    assert len(violations(tmp_path)) == 1


def test_stages_share_contracts_runtime_and_datasets(tmp_path: Path) -> None:
    shared = "from schemas.records import BehaviorEvent\nfrom runtime.kafka import KafkaSettings\n"
    for stage in STAGES:
        path = tmp_path / (stage.replace(".", "/") + "/x.py")
        path.parent.mkdir(parents=True, exist_ok=True)
        datasets = "from jobs.datasets import read_dataset\n" if stage.startswith("jobs.") else ""
        path.write_text(shared + datasets)
    assert violations(tmp_path) == []


def test_the_stack_and_the_demo_may_use_the_stack(tmp_path: Path) -> None:
    for where in ("jobs/localstack/x.py", "jobs/demo/x.py"):
        path = tmp_path / where
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("from jobs.localstack.stack import Stack\n")
    assert violations(tmp_path) == []
