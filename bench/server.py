"""A throwaway portal for load tests: a scratch SQLite database (migrated and seeded) served by gunicorn on loopback."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
GUNICORN = str(Path(PYTHON).with_name("gunicorn"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_env(var_dir: Path, **extra: str) -> dict:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("CELERY_", "DATABASE_URL", "DJANGO_ALLOW"))}
    environment.update(
        DJANGO_SETTINGS_MODULE="portal.settings",
        VAR_DIR=str(var_dir),
        DATABASE_URL=f"sqlite:///{var_dir / 'portal.sqlite3'}",
        MEDIA_ROOT=str(var_dir / "media"),
        DEBUG="1",  # static files through whitenoise's finders (no collectstatic); no SSL redirect on loopback
        LOG_LEVEL="WARNING",
        API_ANON_REQUESTS_PER_MINUTE="1000000",  # every simulated user shares 127.0.0.1
        API_ANON_TOKENS_PER_MINUTE="100000000",
        PYTHONDONTWRITEBYTECODE="1",
    )
    environment.update(extra)
    return environment


def prepare_database(environment: dict) -> None:
    for command in (["migrate", "--noinput", "-v", "0"], ["seed"]):
        subprocess.run([PYTHON, "manage.py", *command], cwd=ROOT, env=environment, check=True, capture_output=True)


@contextmanager
def portal_server(workers: int = 2, threads: int = 1, var_dir: Path | None = None, **extra: str):
    """Yields the base URL of a gunicorn-served portal with seeded data; stops it afterwards."""
    scratch = Path(tempfile.mkdtemp(prefix="eqlm-load-")) if var_dir is None else var_dir
    environment = server_env(scratch, **extra)
    if not (scratch / "portal.sqlite3").exists():
        prepare_database(environment)
    port = free_port()
    worker_class = ["--worker-class", "gthread", "--threads", str(threads)] if threads > 1 else []
    log = open(scratch / "gunicorn.log", "ab")  # noqa: SIM115 - gunicorn writes to it until it stops
    proc = subprocess.Popen(
        [
            GUNICORN,
            "site_root.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            *worker_class,
            "--timeout",
            "120",
            "--graceful-timeout",
            "5",
            "--log-level",
            "warning",
        ],  # fmt: skip
        cwd=ROOT,
        env=environment,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(url + "/api/health", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"gunicorn did not start; see {scratch / 'gunicorn.log'}") from None
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
        if var_dir is None:
            shutil.rmtree(scratch, ignore_errors=True)
