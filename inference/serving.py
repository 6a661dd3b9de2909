"""The serving layer: the process-wide ONNX generator over settings.DEMO_MODEL_ONNX_DIR (never torch)."""

from __future__ import annotations

import threading
from pathlib import Path

from eqlm.runtime import Generator

_generator: Generator | None = None
_generator_lock = threading.Lock()


def get_generator() -> Generator:
    """The process-wide generator over settings.DEMO_MODEL_ONNX_DIR (loaded once, on first use)."""
    global _generator
    if _generator is None:
        with _generator_lock:
            if _generator is None:
                from django.conf import settings

                _generator = Generator(Path(settings.DEMO_MODEL_ONNX_DIR))
    return _generator
