#!/usr/bin/env python
"""Put GPT-2's BPE ranks at GPT2_RANKS_PATH: taken from the pinned openai-whisper sdist on PyPI, checked by sha256.

Usage:  .venv/bin/python scripts/fetch_gpt2_ranks.py      (`make setup` runs it)

Idempotent: when the file is there with the pinned sha256 it does nothing and needs no network. Otherwise it runs
`pip download --no-deps --no-binary :all: openai-whisper==<pinned>` into a temporary folder and extracts the one
file `whisper/assets/gpt2.tiktoken` (nothing is installed: whisper would bring torch, numba and triton).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script: the pins live in eqlm.bpe (which imports nothing heavy)
    sys.path.insert(0, str(ROOT))

from eqlm.bpe import (  # noqa: E402
    GPT2_RANKS_SHA256,
    WHISPER_SDIST_MEMBER,
    WHISPER_VERSION,
    file_sha256,
    ranks_path,
    ranks_present,
)


def extract_ranks(sdist: Path, target: Path) -> None:
    """Write the sdist's gpt2.tiktoken to target (atomically), refusing any other bytes."""
    with tarfile.open(sdist) as archive:
        data = archive.extractfile(WHISPER_SDIST_MEMBER).read()
    partial = target.with_name(target.name + ".partial")
    partial.write_bytes(data)
    if file_sha256(partial) != GPT2_RANKS_SHA256:
        partial.unlink()
        raise SystemExit(f"{sdist.name}: {WHISPER_SDIST_MEMBER} is not the pinned file (sha256 {GPT2_RANKS_SHA256})")
    os.replace(partial, target)


def main() -> int:
    target = ranks_path()
    if ranks_present(target):
        return 0
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        command = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps"]
        command += ["--no-binary", ":all:", f"openai-whisper=={WHISPER_VERSION}", "-d", folder]
        subprocess.run(command, check=True)
        (sdist,) = Path(folder).glob("openai_whisper-*.tar.gz")
        extract_ranks(sdist, target)
    print(f"GPT-2 ranks: {target} (sha256 {GPT2_RANKS_SHA256[:12]}…, from openai-whisper {WHISPER_VERSION})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
