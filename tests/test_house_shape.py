"""The tree keeps its shape: small modules and functions, test helpers under their limit, a front-page README, and
no runs' working files. Each check lists every offender, largest first, so one failure says all that is left."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULE_LINES = 400  # a non-test module (bench/ and scripts/ included) at most
FUNCTION_LINES = 80  # a function or method in one at most
HELPER_LINES = 500  # a test helper (conftest.py, a tests/ module not named test_*.py) under
README_LINES = 200  # the front page at most
SKIPPED_DIRS = {"node_modules", "var", "static", "templates", "fixtures", "migrations", "__pycache__"}


def python_files() -> list[Path]:
    """Every .py file of the project: not in hidden folders (.venv, .git), vendored packages, data or migrations."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).parts[:-1]
        if any(part.startswith(".") or part in SKIPPED_DIRS for part in parts):
            continue
        found.append(path)
    return found


def is_test_code(path: Path) -> bool:
    parts = path.relative_to(ROOT).parts
    return "tests" in parts[:-1] or path.name.startswith("test_") or path.name == "conftest.py"


def is_test_helper(path: Path) -> bool:
    return is_test_code(path) and not path.name.startswith("test_")


def line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def fail_listing(offenders: list[tuple[str, int]], limit: int, what: str) -> None:
    """Fail naming every offender with its line count, largest first; pass when there is none."""
    if offenders:
        rows = "\n".join(f"  {lines:5d}  {name}" for name, lines in sorted(offenders, key=lambda o: (-o[1], o[0])))
        pytest.fail(f"{len(offenders)} {what} over {limit} lines (split them):\n{rows}", pytrace=False)


def long_functions(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    rel = path.relative_to(ROOT).as_posix()
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines = node.end_lineno - node.lineno + 1
            if lines > FUNCTION_LINES:
                out.append((f"{rel}:{node.lineno} {node.name}()", lines))
    return out


def test_no_non_test_module_is_over_400_lines():
    modules = [path for path in python_files() if not is_test_code(path)]
    assert len(modules) > 50, "the walk found too few modules to be the project"
    offenders = [(p.relative_to(ROOT).as_posix(), n) for p in modules if (n := line_count(p)) > MODULE_LINES]
    fail_listing(offenders, MODULE_LINES, "non-test modules")


def test_no_function_in_a_non_test_module_is_over_80_lines():
    offenders = [found for path in python_files() if not is_test_code(path) for found in long_functions(path)]
    fail_listing(offenders, FUNCTION_LINES, "functions")


def test_every_test_helper_is_under_500_lines():
    helpers = [path for path in python_files() if is_test_helper(path)]
    assert any(path.name == "conftest.py" for path in helpers)
    offenders = [(p.relative_to(ROOT).as_posix(), n) for p in helpers if (n := line_count(p)) >= HELPER_LINES]
    fail_listing(offenders, HELPER_LINES - 1, "test helpers")


def test_the_readme_is_a_front_page_of_at_most_200_lines():
    lines = line_count(ROOT / "README.md")
    assert lines <= README_LINES, (
        f"README.md has {lines} lines, over {README_LINES}: it is the front page (the two commands, what the portal "
        "is, the folder map, where to read more); move configuration to docs/CONFIGURATION.md, models to "
        "docs/MODELS.md and history to CHANGELOG.md"
    )


def test_no_runs_working_files_are_carried_in_the_tree():
    carry = ROOT / "fixtures" / "carry"
    assert not carry.exists(), (
        f"{carry.relative_to(ROOT)}/ is in the tree: runs' checkpoints, states, logs and bench outputs stay out of it; "
        "how a run was made goes in its experiment's provenance and in CHANGELOG.md"
    )


def test_the_checks_tell_test_code_from_modules():
    assert is_test_helper(ROOT / "conftest.py") and is_test_helper(ROOT / "eqlm" / "tests" / "tiny_training.py")
    assert is_test_code(ROOT / "tests" / "test_house_shape.py")
    assert not is_test_helper(ROOT / "tests" / "test_house_shape.py")
    assert not is_test_code(ROOT / "bench" / "decode.py") and not is_test_code(ROOT / "eqlm" / "testing.py")
