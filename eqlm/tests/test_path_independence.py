"""Path independence: a contracting map reaches one point from every start; the figures say when a map does not."""

import numpy as np
import pytest
import torch

from eqlm.model import EqLM
from eqlm.path_independence import path_independence
from eqlm.testing import tiny_config


def windows(count=4, length=17, seed=0):
    return np.random.default_rng(seed).integers(0, 256, size=(count, length))


def tiny(state_skip: float) -> EqLM:
    torch.manual_seed(0)
    return EqLM(tiny_config(state_skip=state_skip)).eval()


@pytest.mark.slow  # three solves of 40 iterations per start
def test_a_contracting_map_reaches_the_same_point_from_zero_noise_and_warm_starts():
    # without the state inside the LayerNorm's sum, f(z) = LN(Attn(z) + MLP(z) + inj) with small weights contracts
    figures = path_independence(tiny(0.0), windows(), [2, 40], batch=2)
    assert figures.positions == 4 * 16
    for start in ("noise", "warm"):
        assert figures.starts[start].aa_cosine > 0.999
        assert figures.starts[start].greedy_agreement == 1.0
        assert abs(figures.starts[start].bits_per_byte[40] - figures.starts["zero"].bits_per_byte[40]) < 1e-5


@pytest.mark.slow
def test_a_map_that_keeps_its_start_shows_a_low_alignment_and_agreement():
    # ten times the state inside the sum: f(z) is close to LN(z), so the solve keeps the direction it started from
    figures = path_independence(tiny(10.0), windows(), [2, 40], batch=4)
    for start in ("noise", "warm"):
        assert figures.starts[start].aa_cosine < 0.5
        assert figures.starts[start].greedy_agreement < 0.5


def test_warm_depths_measure_the_warm_start_at_fewer_depths_with_the_same_deepest_figures():
    model, ids = tiny(1.0), windows(count=2, length=9)
    every = path_independence(model, ids, [2, 4, 8], batch=2)
    fewer = path_independence(model, ids, [2, 4, 8], batch=2, warm_depths=[2])
    assert sorted(fewer.starts["warm"].bits_per_byte) == [2, 8]  # the deepest is always measured
    assert sorted(fewer.starts["noise"].bits_per_byte) == [2, 4, 8]
    for start in ("noise", "warm"):
        assert fewer.starts[start].aa_cosine == pytest.approx(every.starts[start].aa_cosine)
        assert fewer.starts[start].greedy_agreement == every.starts[start].greedy_agreement
        assert fewer.starts[start].bits_per_byte[8] == pytest.approx(every.starts[start].bits_per_byte[8])
