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


KJV_FILE_ENV = "EQLM_KJV_FILE"  # a machine without apt (an accelerator machine) reads the dump from this file


def kjv_text() -> str:
    """One verse per line, references stripped, UTF-8 (in fact ASCII), ending with a newline.

    With EQLM_KJV_FILE set, the dump is read from that file instead (written by `manage.py offload_experiment` on a
    machine that has the package). Its sha256 enters every run hash, so a different text makes a different run, which
    a resume or an import refuses.
    """
    if os.environ.get(KJV_FILE_ENV):
        return Path(os.environ[KJV_FILE_ENV]).read_text(encoding="utf-8")
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


CODE_PACKAGE = "django"
CODE_CORPUS_NAME = (
    "Python source of the pinned Django wheel (requirements.txt), every *.py file in sorted path order, "
    "each preceded by a '# file: <path>' line"
)


def code_text(package: str = CODE_PACKAGE) -> bytes:
    """The second-domain corpus: the installed package's Python source, concatenated in sorted path order.

    The package version is pinned in requirements.txt, so the bytes (and their sha256) are the same on every machine
    that installed the project's requirements.
    """
    import importlib.util

    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"the package {package!r} is not installed: install the project's requirements first")
    root = Path(next(iter(spec.submodule_search_locations)))
    parts = []
    for path in sorted(root.rglob("*.py"), key=lambda p: p.relative_to(root.parent).as_posix()):
        rel = path.relative_to(root.parent).as_posix()
        parts.append(f"# file: {rel}\n".encode() + path.read_bytes().rstrip(b"\n") + b"\n\n")
    return b"".join(parts)


def load_code_corpus(package: str = CODE_PACKAGE) -> tuple[bytes, str]:
    """(code corpus bytes, sha256)."""
    data = code_text(package)
    return data, hashlib.sha256(data).hexdigest()
