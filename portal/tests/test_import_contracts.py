"""The import contracts of pyproject.toml fail on a planted violation of each kind, naming the contract.

Each test copies the Python packages into a temporary folder, plants one violation there and runs `lint-imports`
with the project's own pyproject.toml; the working tree is never touched.
"""

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
PACKAGES = CONFIG["root_packages"]
NAMES = {contract["id"]: contract["name"] for contract in CONFIG["contracts"]}
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"

pytestmark = pytest.mark.slow  # one lint-imports subprocess per case, about a second each


def python_only(folder: str, names: list[str]) -> set[str]:
    """shutil.copytree's ignore: keep folders and .py files (the graph is all lint-imports reads)."""
    return {n for n in names if n == "__pycache__" or (not n.endswith(".py") and not (Path(folder) / n).is_dir())}


@pytest.fixture
def project(tmp_path) -> Path:
    """A copy of every root package and pyproject.toml, to plant violations in."""
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=python_only)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def lint_imports(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "portal.settings"},
    )


def append(path: Path, code: str) -> None:
    path.write_text(path.read_text() + "\n\n" + code + "\n")


def test_every_contract_is_kept_by_the_code_as_it_is(project):
    result = lint_imports(project)
    assert result.returncode == 0, result.stdout + result.stderr
    for name in NAMES.values():
        assert f"{name} KEPT" in result.stdout


def lazy(statement: str) -> str:
    """An import inside a function: the contracts see those too."""
    return f"def planted():\n    {statement}  # noqa\n"


# (contract id, file to plant in, code appended to it, the other contracts it also breaks): each kind of contract
PLANTS = [
    ("eqlm-pure", "eqlm/tokenizer.py", lazy("from django.conf import settings"), []),
    ("acyclic", "models_app/model_ids.py", lazy("from models_app import serving"), []),
    ("acyclic", "eqlm/tokenizer.py", lazy("from eqlm import runtime"), []),
    # inference.v1 imports models_app.serving, so this one closes a circle too, across two apps now that serving is
    # models_app's: the layers contract names it (acyclic looks inside each app)
    ("serving-below-v1", "models_app/serving.py", lazy("from inference.v1 import wire"), ["layers"]),
    ("web-no-torch", "site_root/urls.py", lazy("from eqlm import trainer"), []),
    ("layers", "results/records.py", lazy("from benchmarks_app import tables"), []),  # the row store reads a table
    ("layers", "portal/jobs.py", lazy("from inference import tasks"), []),  # the base imports an app
    ("layers", "experiments_app/services.py", lazy("from lab_app import services"), []),  # two apps of one layer
    ("layers", "models_app/services.py", lazy("from council_app import live"), []),  # closes models_app <- council
]


@pytest.mark.parametrize("contract,path,code,also", PLANTS, ids=[f"{c}:{p}" for c, p, _, _ in PLANTS])
def test_a_planted_violation_fails_naming_its_contract(project, contract, path, code, also):
    append(project / path, code)
    result = lint_imports(project)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{NAMES[contract]} BROKEN" in result.stdout
    broken = {name for name in NAMES.values() if f"{name} BROKEN" in result.stdout}
    assert broken == {NAMES[c] for c in [contract, *also]}  # the others are still kept
