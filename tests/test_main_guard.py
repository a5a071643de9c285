"""A script's ``if __name__ == "__main__":`` block is its last statement.

Python runs the block where it stands: a function defined below it does not exist
yet when ``main()`` runs, and fails only on the path that calls it (a benchmark's
worker failed its warm-up that way). Linters and mypy do not see it.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("schemas", "runtime", "jobs", "inference", "feature_repo", "tests")


def _is_main_guard(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Compare)
        and isinstance(node.test.left, ast.Name)
        and node.test.left.id == "__name__"
    )


def test_every_main_guard_comes_last() -> None:
    offenders = []
    checked = 0
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            body = ast.parse(path.read_text(), str(path)).body
            guards = [n for n, node in enumerate(body) if _is_main_guard(node)]
            checked += bool(guards)
            if guards and guards[-1] != len(body) - 1:
                offenders.append(str(path.relative_to(ROOT)))
    assert checked > 10, "no script found: the walk is looking in the wrong place"
    assert offenders == []
