"""A programme EqLM with its spectral norm folded exports as embed/step/head graphs that decode like the torch model.

The step graph is the portal's (z, inj, past_k, past_v) -> (z_next, k, v): onnxruntime run position by position with
per-iteration K/V caches gives the whole-sequence Picard logits of the torch model.
"""

import os
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from eqlm.onnx_io import BHP, BHT, BT, export_embed_and_head, export_graph
from eqlm.programme.checkpoint import load_programme_model

REFS = Path(
    os.environ.get("PROGRAMME_MODELS_DIR", Path(__file__).resolve().parents[2].parent / "shared" / "programme-models")
)
IDS = [464, 2068, 7586, 21831, 18045, 625, 262, 16931, 3290, 13]  # "The quick brown fox jumps over the lazy dog."


class Step(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.block = model.block

    def forward(self, z, inj, past_k, past_v):
        return self.block(z, inj, past_k, past_v)


def export(model, out: Path) -> None:
    d, h, dh = model.config.d_model, model.config.n_heads, model.config.head_dim
    z, past = torch.randn(1, 3, d), torch.randn(1, h, 2, dh)
    with torch.no_grad():
        export_embed_and_head(model, out)
        axes = {"z": BT, "inj": BT, "past_k": BHP, "past_v": BHP, "z_next": BT, "k": BHT, "v": BHT}
        names = (["z", "inj", "past_k", "past_v"], ["z_next", "k", "v"])
        export_graph(Step(model), (z, z, past, past), out / "step.onnx", *names, axes)


def cached_onnx_logits(out: Path, ids: list[int], depth: int, h: int, dh: int) -> np.ndarray:
    import onnxruntime as ort

    embed, step, head = (ort.InferenceSession(str(out / f"{g}.onnx")) for g in ("embed", "step", "head"))
    cache = [(np.zeros((1, h, 0, dh), np.float32),) * 2 for _ in range(depth)]
    rows = []
    for t, token in enumerate(ids):
        inj = embed.run(None, {"input_ids": np.array([[token]]), "positions": np.array([[t]])})[0]
        z = np.zeros_like(inj)
        for i in range(depth):
            z_next, k, v = step.run(None, {"z": z, "inj": inj, "past_k": cache[i][0], "past_v": cache[i][1]})
            cache[i] = (np.concatenate([cache[i][0], k], 2), np.concatenate([cache[i][1], v], 2))
            z = z_next
        rows.append(head.run(None, {"z": z})[0][0, 0])
    return np.stack(rows)


@pytest.mark.parametrize("name", ["eqlm-postln", "eqlm-residual-nosn"])
def test_the_folded_export_decodes_like_the_torch_model(name, tmp_path):
    if not (REFS / f"{name}.pt").exists():
        pytest.skip(f"the programme's reference files are not at {REFS} (set PROGRAMME_MODELS_DIR)")
    model = load_programme_model(REFS / f"{name}.pt", 1 << 30)[0]
    with torch.no_grad():
        expected = model(torch.tensor([IDS]), solver="picard", max_iter=8, tol=0.0)[0].numpy()
    model.fold_spectral_norm()
    export(model, tmp_path)
    got = cached_onnx_logits(tmp_path, IDS, 8, model.config.n_heads, model.config.head_dim)
    assert np.abs(got - expected).max() <= 1e-5  # measured: 1.9e-6, fp32 rounding
