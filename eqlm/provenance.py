"""What a trained file records about where it came from: the commit, content hashes, atomic writes."""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from pathlib import Path


def git_commit() -> str:
    """HEAD's commit; EQLM_GIT_COMMIT names it on a machine that got a copy of the tree without its repository."""
    if os.environ.get("EQLM_GIT_COMMIT"):
        return os.environ["EQLM_GIT_COMMIT"]
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True, timeout=10)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def sha256_file(path: str | Path) -> str:
    """A file named by its content (checkpoints a run starts from or learns from)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def atomic_torch_save(payload: dict, path: Path) -> None:
    """torch.save through a temporary file and a rename, so a reader never sees half a file."""
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    os.close(fd)
    try:
        torch.save(payload, tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
