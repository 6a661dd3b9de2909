"""Run a shell example from the API reference page (/api/) as a reader would paste it."""

import shutil
import subprocess

import pytest


def run_shell_example(command: str) -> str:
    """Run one curl example with bash, without an API key and with a bare PATH; returns what it printed."""
    if not shutil.which("curl"):
        pytest.skip("curl is not installed")
    run = subprocess.run(
        ["bash", "-c", command],
        capture_output=True,
        text=True,
        timeout=60,
        env={"EQLM_API_KEY": "", "PATH": "/usr/bin:/bin"},
    )
    assert run.returncode == 0, run.stderr
    return run.stdout
