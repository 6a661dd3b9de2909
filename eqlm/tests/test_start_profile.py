"""Bits/byte by depth from a zero or a noise start, and the state cosine between the two starts."""

import numpy as np
import pytest

from eqlm.convergence import TorchBackend, profile_by_depth, windows_of
from eqlm.start_profile import profile_starts
from eqlm.testing import tiny_model


def windows(count: int = 3, size: int = 17) -> np.ndarray:
    text = b"In the beginning God created the heaven and the earth. And the earth was without form." * 2
    return windows_of(text, size, count)


def test_the_zero_start_gives_the_convergence_profiles_bits_per_byte():
    model = tiny_model(seed=1)
    ours = profile_starts(model, windows(), [1, 3, 6], starts=["zero"])
    theirs = profile_by_depth(TorchBackend(model), windows(), max_depth=6).curve("bits_per_byte")
    assert ours.bits_per_byte["zero"] == pytest.approx({d: theirs[d] for d in (1, 3, 6)}, rel=1e-9)
    assert ours.state_cosine == {} and ours.positions == 3 * 16


def test_the_noise_start_is_seeded_and_the_cosine_compares_the_two_starts():
    model = tiny_model(seed=1)
    first = profile_starts(model, windows(), [1, 8], noise_seed=5)
    again = profile_starts(model, windows(), [1, 8], noise_seed=5)
    other = profile_starts(model, windows(), [1, 8], noise_seed=6)
    assert first.bits_per_byte == again.bits_per_byte
    assert first.bits_per_byte["noise"] != other.bits_per_byte["noise"]
    assert all(-1 <= c <= 1 for c in first.state_cosine.values())
    assert first.bits_per_byte["noise"][1] != first.bits_per_byte["zero"][1]


def test_windows_longer_than_the_model_reads_are_refused():
    with pytest.raises(ValueError, match="positions"):
        profile_starts(tiny_model(), windows(size=80), [1])


def test_an_explicit_transformer_is_measured_at_its_layer_count():
    import torch

    from eqlm.model import build_model
    from eqlm.start_profile import explicit_profile

    torch.manual_seed(0)
    model = build_model("ExplicitLM", tiny_model().config.to_dict() | {"n_layers": 2})
    profile = explicit_profile(model, windows())
    assert list(profile.bits_per_byte) == ["zero"] and list(profile.bits_per_byte["zero"]) == [2]
    with torch.no_grad():
        ids = torch.as_tensor(windows())
        nll = torch.nn.functional.cross_entropy(model(ids[:, :-1]).double().flatten(0, 1), ids[:, 1:].flatten())
    assert profile.bits_per_byte["zero"][2] == pytest.approx(float(nll) / np.log(2), rel=1e-9)
