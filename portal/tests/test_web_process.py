"""The web process stays light: no URLconf or view pulls in PyTorch."""

import subprocess
import sys
from pathlib import Path

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
for app in ["portal", "findings_app", "benchmarks_app", "lab_app", "inference", "council_app"]:
    for name in ["views", "api", "api_views", "urls", "api_urls", "services", "admin", "serializers"]:
        try:
            importlib.import_module(f"{app}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{app}.{name}":
                raise
import portal.wsgi
print("torch" in sys.modules)
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


def test_importing_every_urlconf_and_view_leaves_torch_out():
    assert run_probe(PROBE) == "False"


WARM_PROBE = """
import sys
import portal.wsgi
from inference import serving
print(serving._generator is not None, "torch" in sys.modules)
"""


def test_a_wsgi_worker_loads_the_demo_model_before_its_first_request_without_torch():
    assert run_probe(WARM_PROBE) == "True False"


def test_warm_up_can_be_turned_off():
    assert run_probe(WARM_PROBE, WARM_UP_MODEL="0") == "False False"


def test_a_missing_model_does_not_stop_the_worker_from_starting(tmp_path):
    assert run_probe(WARM_PROBE, DEMO_MODEL_ONNX_DIR=str(tmp_path / "nowhere")) == "False False"
