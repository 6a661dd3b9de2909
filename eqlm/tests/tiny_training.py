"""What the training tests share: a tiny test text, a tiny two-stage recipe file, and a digest of a model's weights
(imports torch)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import torch

from eqlm.recipe import Recipe, load_recipe

TEXT = b"In the beginning God created the heaven and the earth. And the earth was without form, and void.\n" * 40
ROOT = Path(__file__).resolve().parents[2]
TINY_TERMS = {
    "final_ce": {"weight": 0.5},
    "anytime_ce": {"weight": 0.5, "depths": [2]},
    "residual": {"weight": 0.1},
    "jacobian": {"weight": 0.1},
}
TINY_RECIPE = """
title = "a tiny recipe for the tests"
[model]
d_model = 32
n_heads = 4
d_mlp = 64
max_positions = 32
[corpus]
file = "{corpus}"
[defaults]
batch_size = 2
seq_len = 32
schedule = {{ lr = 3e-3, warmup_steps = 2 }}
solve = {{ depth = {{ min = 3, max = 6 }}, grad_iters = 2, start = {{ noise = 0.5 }} }}
terms.final_ce.weight = 0.5
terms.anytime_ce = {{ weight = 0.5, depths = [2] }}
terms.residual.weight = 0.1
terms.jacobian.weight = 0.1
[stages.first]
steps = 6
[stages.second]
from = "first"
steps = 4
schedule = {{ lr = 1e-3, warmup_steps = 1 }}
terms.progressive = {{ weight = 0.5, max_iters = 6 }}
"""


def tiny_recipe(tmp_path) -> Recipe:
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(TEXT * 4)
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_RECIPE.format(corpus=corpus))
    return load_recipe(path)


def weights(path) -> dict:
    data = torch.load(path, weights_only=True)
    return data.get("model") or data["state_dict"]


def digest(path) -> str:
    h = hashlib.sha256()
    state = weights(path)
    for key in sorted(state):
        h.update(key.encode())
        h.update(state[key].numpy().tobytes())
    return h.hexdigest()[:16]
