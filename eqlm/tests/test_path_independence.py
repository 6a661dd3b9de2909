"""Path independence: a contracting map reaches one point from every start; the figures say when a map does not."""

import numpy as np
import pytest
import torch

from eqlm.model import EqLM
from eqlm.path_independence import from_dict, merge, path_independence, to_dict
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


def test_parts_of_whole_batches_with_the_generator_passed_on_merge_to_one_pass():
    model, data = tiny(10.0), windows(count=7, seed=3)  # a map that keeps its start: the noise draws show
    whole = path_independence(model, data, [1, 3, 6], batch=2, seed=5)
    gen, parts, told = torch.Generator().manual_seed(5), [], []
    for lo in (0, 4):  # whole batches of 2, the last part short as the last batch is
        parts.append(path_independence(model, data[lo : lo + 4], [1, 3, 6], batch=2, gen=gen, progress=told.append))
    merged = from_dict(to_dict(merge(parts)))
    assert told == [2, 4, 2, 3] and merged.positions == whole.positions == 7 * 16
    for start, found in whole.starts.items():
        got = merged.starts[start]
        assert got.bits_per_byte == pytest.approx(found.bits_per_byte, rel=1e-12)
        for name in ("aa_cosine", "greedy_agreement"):
            assert getattr(got, name) == (
                None if getattr(found, name) is None else pytest.approx(getattr(found, name), rel=1e-6)
            )


def test_parts_drawing_their_noise_afresh_do_not_merge_to_one_pass():
    model, data = tiny(10.0), windows(count=4, seed=3)
    whole = path_independence(model, data, [1, 6], batch=2, seed=5)
    parts = [path_independence(model, data[lo : lo + 2], [1, 6], batch=2, seed=5) for lo in (0, 2)]
    assert merge(parts).starts["noise"].bits_per_byte[6] != pytest.approx(
        whole.starts["noise"].bits_per_byte[6], rel=1e-9
    )
