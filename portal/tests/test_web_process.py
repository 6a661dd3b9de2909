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


def test_importing_every_urlconf_and_view_leaves_torch_out():
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"DJANGO_SETTINGS_MODULE": "portal.settings", "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "False"
