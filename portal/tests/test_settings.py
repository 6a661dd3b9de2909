"""Production settings refuse what is only safe on a laptop."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.checks import Error

from portal.checks import eager_tasks_need_debug

ROOT = Path(__file__).resolve().parents[2]


def run_manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    dropped = ("CELERY_", "SECRET_KEY", "DEBUG", "DJANGO_ALLOW_ASYNC")
    environment = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    environment.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120
    )


def test_production_check_refuses_eager_tasks(settings):
    settings.DEBUG = False
    settings.CELERY_TASK_ALWAYS_EAGER = True
    errors = eager_tasks_need_debug(None)
    assert len(errors) == 1 and isinstance(errors[0], Error)
    assert errors[0].id == "portal.E001"


def test_eager_tasks_are_fine_while_debugging(settings):
    settings.DEBUG = True
    settings.CELERY_TASK_ALWAYS_EAGER = True
    assert eager_tasks_need_debug(None) == []


@pytest.mark.slow  # a manage.py subprocess
def test_missing_secret_key_with_debug_off_is_a_clear_startup_error():
    result = run_manage("check", DEBUG="0", CELERY_BROKER_URL="redis://127.0.0.1:6379/0")
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


@pytest.mark.slow  # a manage.py subprocess
def test_production_check_with_a_broker_and_a_secret_passes_deploy_checks():
    result = run_manage(
        "check",
        "--deploy",
        "--fail-level",
        "ERROR",
        DEBUG="0",
        SECRET_KEY="a-long-random-production-secret-key-for-the-test-" + "k" * 30,
        CELERY_BROKER_URL="redis://127.0.0.1:6379/0",
    )
    assert result.returncode == 0, result.stderr
    assert "portal.E001" not in result.stdout + result.stderr


@pytest.mark.slow  # a manage.py subprocess
def test_eager_tasks_with_debug_off_fail_the_system_check():
    result = run_manage("check", DEBUG="0", SECRET_KEY="s" * 60)
    assert result.returncode != 0
    assert "portal.E001" in result.stdout + result.stderr
