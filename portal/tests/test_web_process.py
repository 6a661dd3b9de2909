"""The web process stays light: no URLconf or view pulls in PyTorch; the eqlm library never imports Django."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import importlib, sys, django
django.setup()
from django.urls import get_resolver
def walk(patterns):
    for p in patterns:
        if hasattr(p, "url_patterns"):
            walk(p.url_patterns)
        else:
            p.callback
walk(get_resolver().url_patterns)
NAMES = ["views", "api", "api_views", "urls", "api_urls", "services", "admin", "serializers", "models", "tasks"]
V1_NAMES = ["views", "urls", "serializers", "plan", "wire", "docs", "keys", "ratelimit", "admin"]
APPS = [
    "portal", "site_root", "results", "findings_app", "benchmarks_app", "lab_app", "models_app", "inference",
    "council_app", "experiments_app",
]
PACKAGES = [(app, NAMES) for app in APPS]
for app, names in PACKAGES + [("inference.v1", V1_NAMES)]:
    for name in names:
        try:
            importlib.import_module(f"{app}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{app}.{name}":
                raise
import site_root.wsgi
print("torch" in sys.modules, ",".join(sorted(m for m in sys.modules if m.startswith("eqlm."))))
"""


def run_probe(code: str, **env: str) -> str:
    """Run `code` in a fresh interpreter with the portal's settings; returns its last line of output."""
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"DJANGO_SETTINGS_MODULE": "portal.settings", "PATH": "/usr/bin:/bin", **env},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def web_probe() -> tuple[str, str]:
    """What a fresh web process holds after importing every URLconf and view: ("False", "eqlm.a,eqlm.b,...")."""
    torch_loaded, eqlm_modules = run_probe(PROBE).split(" ")
    return torch_loaded, eqlm_modules


def test_importing_every_urlconf_and_view_leaves_torch_out(web_probe):
    torch_loaded, eqlm_modules = web_probe
    assert torch_loaded == "False"
    assert "eqlm.generation" in eqlm_modules.split(",")  # the probe does reach the library


def test_no_web_module_imports_an_eqlm_module_that_imports_torch(web_probe):
    _, loaded = web_probe
    torch_modules = {f"eqlm.{path.stem}" for path in (ROOT / "eqlm").glob("*.py") if "torch" in top_level_imports(path)}
    assert {"eqlm.model", "eqlm.trainer"} <= torch_modules  # the check below has something to find
    assert sorted(torch_modules & set(loaded.split(","))) == []


def top_level_imports(path: Path) -> set[str]:
    """The top-level package of every module-level import in a file (imports inside functions are lazy)."""
    found = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_nothing_in_the_eqlm_library_imports_django():
    offenders = []
    for path in sorted((ROOT / "eqlm").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            offenders += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] in DJANGO_PACKAGES]
    assert offenders == []


DJANGO_PACKAGES = {"django", "rest_framework", "drf_spectacular", "celery", "portal", "models_app", "inference"}


WARM_PROBE = """
import sys
import site_root.wsgi
from models_app import serving
default = next(s for s in serving.model_states() if s["default"])
print(default["state"] == "loaded", "torch" in sys.modules)
"""


@pytest.mark.slow  # a WSGI start in a subprocess
def test_a_wsgi_worker_loads_the_demo_model_before_its_first_request_without_torch():
    assert run_probe(WARM_PROBE) == "True False"


@pytest.mark.slow  # a WSGI start in a subprocess
def test_warm_up_can_be_turned_off():
    assert run_probe(WARM_PROBE, WARM_UP_MODEL="0") == "False False"


@pytest.mark.slow  # a WSGI start in a subprocess
def test_a_missing_model_does_not_stop_the_worker_from_starting():
    assert run_probe(WARM_PROBE, DEFAULT_MODEL="nowhere") == "False False"


STATES_PROBE = """
import site_root.wsgi
from models_app import serving
print(",".join(f"{s['id']}={s['state']}" for s in serving.model_states() if s["source"] == "bundled"))
"""


@pytest.mark.slow  # a WSGI start in a subprocess
def test_a_wsgi_worker_warms_every_bundled_model(bundled_model_ids):
    assert "eqlm-demo-unrolled" in bundled_model_ids
    assert run_probe(STATES_PROBE) == ",".join(f"{model_id}=loaded" for model_id in bundled_model_ids)


@pytest.mark.slow  # a WSGI start in a subprocess
def test_a_missing_default_model_leaves_the_other_models_warm(bundled_model_ids):
    states = run_probe(STATES_PROBE, DEFAULT_MODEL="nowhere")
    assert states == ",".join(["eqlm-demo=failed"] + [f"{model_id}=loaded" for model_id in bundled_model_ids[1:]])
