"""Fixtures of the eqlm tests (no database)."""

import pytest
import torch


@pytest.fixture
def one_thread():
    """torch on one thread for the test (threads pinned: the programme's Anderson solve moves with their count)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
