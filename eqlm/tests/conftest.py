"""Fixtures of the eqlm tests (no database)."""

import shutil
from pathlib import Path

import pytest
import torch

from eqlm.programme.protocol import use_cpu_threads


@pytest.fixture
def one_thread():
    """torch on one thread for the test (threads pinned: the programme's Anderson solve moves with their count)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def worker_threads():
    """torch on the threads a worker's protocol run takes (eqlm.programme.protocol.use_cpu_threads). Measured on the
    full protocol, residual-nosn file, sentences further than 1e-3 nats per token of 2,000: 17 at two threads on an
    AVX-512 machine (18 with torch's kernels pinned to AVX2), 23 at one thread there (18 on an AVX2 machine)."""
    threads = torch.get_num_threads()
    use_cpu_threads()
    yield
    torch.set_num_threads(threads)


MODELS = Path(__file__).resolve().parents[2] / "models"


def _with_int8(tmp_path_factory, model: str) -> Path:
    """A copy of a bundled model's export with its int8 graphs (built on request: the bundled exports are fp32)."""
    from eqlm.quantize import add_int8

    export = tmp_path_factory.mktemp(f"{model}-int8") / "onnx"
    shutil.copytree(MODELS / model / "onnx", export)
    add_int8(export)
    return export


@pytest.fixture(scope="session")
def demo_int8(tmp_path_factory):
    """eqlm-demo with its int8 graphs."""
    return _with_int8(tmp_path_factory, "eqlm-demo")


@pytest.fixture(scope="session")
def explicit_int8(tmp_path_factory):
    """explicit-demo with its int8 graphs."""
    return _with_int8(tmp_path_factory, "explicit-demo")
