"""The demo corpus: the King James Bible from Debian's bible-kjv package, dumped to plain text reproducibly."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

CORPUS_NAME = "King James Bible (Debian bible-kjv 4.38, `bible -f gen1:1-rev22:21`, verse references stripped)"
HELDOUT_FRACTION = 0.05
_REFERENCE = re.compile(r"^[1-3]?[A-Za-z]+\d+:\d+ ")


def ensure_bible_installed() -> str:
    """Path of the `bible` program, installing the Debian package with apt when missing and running as root."""
    found = shutil.which("bible")
    if found:
        return found
    if hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(["apt-get", "install", "-y", "bible-kjv"], check=True)
        found = shutil.which("bible")
        if found:
            return found
    raise RuntimeError("the `bible` program is missing: install Debian's bible-kjv package (apt-get install bible-kjv)")


def kjv_text() -> str:
    """One verse per line, references stripped, UTF-8 (in fact ASCII), ending with a newline."""
    program = ensure_bible_installed()
    raw = subprocess.run([program, "-f", "gen1:1-rev22:21"], check=True, capture_output=True).stdout
    lines = [_REFERENCE.sub("", line) for line in raw.decode("utf-8").splitlines() if line.strip()]
    return "\n".join(lines) + "\n"


def load_corpus(path: Path | None = None) -> tuple[bytes, str]:
    """(corpus bytes, sha256). A path reads a plain text file instead of dumping the bible."""
    data = Path(path).read_bytes() if path else kjv_text().encode("utf-8")
    return data, hashlib.sha256(data).hexdigest()


def split(data: bytes, heldout_fraction: float = HELDOUT_FRACTION) -> tuple[bytes, bytes]:
    """(train, held-out): the held-out slice is the last fraction of the text."""
    cut = int(len(data) * (1 - heldout_fraction))
    return data[:cut], data[cut:]
