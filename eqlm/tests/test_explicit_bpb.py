"""An explicit transformer's held-out bits/byte at its layer count."""

import numpy as np
import pytest
import torch

from eqlm.convergence import windows_of
from eqlm.explicit_bpb import explicit_bits_per_byte
from eqlm.model import build_model
from eqlm.testing import tiny_config


def test_an_explicit_transformer_is_measured_by_its_own_cross_entropy():
    text = b"In the beginning God created the heaven and the earth. And the earth was without form." * 2
    windows = windows_of(text, 17, 3)
    torch.manual_seed(0)
    model = build_model("ExplicitLM", tiny_config(n_layers=2).to_dict())
    bpb, positions = explicit_bits_per_byte(model, windows, batch=2)
    with torch.no_grad():
        ids = torch.as_tensor(windows)
        nll = torch.nn.functional.cross_entropy(model(ids[:, :-1]).double().flatten(0, 1), ids[:, 1:].flatten())
    assert positions == 3 * 16 and bpb == pytest.approx(float(nll) / np.log(2), rel=1e-9)
