"""ONNX export of the programme's models (eqlm.programme): the same embed / step (or layers) / head graphs and
manifest shape as the portal's own exports, so every runtime (server and browser) serves them unchanged.

Spectral norm is folded into plain weights first (eval mode, W0 / (u . (W0 v)) from the stored u and v):
torch.onnx.export does not support the parametrization's `aten::vdot`. The manifest names the GPT-2 tokenizer.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

from .limits import DEPTH_CAP_MAX, DEPTH_MAX, HALTS, SOLVERS, STARTS
from .model import RESIDUAL_EPS, relative_residual
from .noise import NOISE_RNG
from .onnx_io import BHP, BHT, BT, EMBED_IO, HEAD_IO, export_embed_and_head, export_graph, manifest_head, sha256

EMPTY_PROMPT = "\n"  # GPT-2 id 198: what an empty prompt becomes
STEP_IO = {
    "inputs": {"z": "[B,T,D]", "inj": "[B,T,D]", "past_k": "[B,H,P,Dh]", "past_v": "[B,H,P,Dh]"},
    "outputs": {"z_next": "[B,T,D]", "k": "[B,H,T,Dh]", "v": "[B,H,T,Dh]", "residual": "[B,T]"},
}


class _Step(nn.Module):
    """One iteration of the programme's block: f(z, inj) with the K/V of its input z, and the relative residual."""

    def __init__(self, block: nn.Module):
        super().__init__()
        self.block = block

    def forward(self, z, inj, past_k, past_v):
        z_next, k, v = self.block(z, inj, past_k, past_v)
        return z_next, k, v, relative_residual(z_next, z)


class _Layer(nn.Module):
    """One explicit layer: the programme's block with its injection fed zeros."""

    def __init__(self, block: nn.Module):
        super().__init__()
        self.block = block

    def forward(self, z, past_k, past_v):
        z_next, k, v = self.block(z, torch.zeros_like(z), past_k, past_v)
        return z_next, k, v, relative_residual(z_next, z)


def programme_semantics(cfg) -> dict:
    form = (
        "h = LN1(z + Attn(z) + g(x)); z_next = LN2(h + MLP(h))"
        if cfg.map_form == "postln"
        else f"z_next = z + {cfg.residual_damping} (Attn(LN1 z) + MLP(LN2(z + Attn)) + g(x))"
    )
    return {
        "iteration": f"{form}, with g(x) = sigmoid(input_gate(x)) * x the gated injection of the token and position "
        "embedding x; iteration i of a position attends to the K/V that positions before it produced at iteration i "
        "(past_k/past_v), so per-position Picard equals the programme's whole-sequence Picard at the same depth.",
        "start": "z = 0 for every position (the programme's solvers start from zeros).",
        "programme_settings": f"The programme's own forward solves the whole sequence jointly with Anderson "
        f"(m = 5, beta = 1) for up to {cfg.deq_max_iter} iterations; it is non-causal, so its log-probabilities "
        "differ from those of a per-position solve. The workers score with it (solver 'anderson-joint').",
        "head": "logits = tied_head(LN_final(z)) / sqrt(d_model)",
        "spectral_norm": "folded into plain weights in eval mode" if cfg.spectral_norm else "none",
        "context": "positions are absolute, 0..max_positions-1; the prompt keeps its last tokens when too long.",
        "empty_prompt": "an empty prompt is replaced by a single newline (GPT-2 id 198).",
    }


def explicit_fields(n: int, roles: list[str]) -> dict:
    """An explicit model's depth is its layer count; it has no solver, start or halting rule to choose."""
    layer_io = {side: {k: v for k, v in names.items() if k != "inj"} for side, names in STEP_IO.items()}
    return {
        "n_layers": n,
        "layers": roles,
        "default_depth": n,
        "min_depth": n,
        "max_depth": n,
        "solvers": ["picard"],
        "starts": [],
        "halts": [],
        "io": {"embed": EMBED_IO, "layer": layer_io, "head": HEAD_IO},
        "controls_note": f"The programme's explicit transformer: {n} distinct blocks, each applied once. Its depth "
        "is its layer count; it has no tolerance, solver, start or halting rule to choose.",
    }


def export_programme_onnx(model, out_dir: Path, model_id: str, extra: dict | None = None, progress=None) -> dict:
    """Write the graphs and manifest.json of a programme model (EqLM or ExplicitLM) into out_dir."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    model = model.eval()
    if not model.spectral_folded:
        model.fold_spectral_norm()
    cfg = model.config
    num_params = model.num_params()
    h, dh, d = cfg.n_heads, cfg.head_dim, cfg.d_model
    z, past = torch.randn(1, 3, d), torch.randn(1, h, 2, dh)
    report = progress or (lambda fraction, message: None)
    explicit = model.model_class == "ExplicitLM"
    roles = [f"layer_{i:02d}" for i in range(len(model.layers))] if explicit else ["step"]
    with torch.no_grad():
        report(0.0, "exporting the embedding and the head")
        export_embed_and_head(model, out_dir)
        blocks = list(model.layers) if explicit else [model.block]
        for i, (role, block) in enumerate(zip(roles, blocks, strict=True)):
            report((i + 1) / (len(roles) + 1), f"exporting {role}")
            inputs = ["z", "past_k", "past_v"] if explicit else ["z", "inj", "past_k", "past_v"]
            axes = {"z": BT, "inj": BT, "past_k": BHP, "past_v": BHP, "z_next": BT, "k": BHT, "v": BHT, "residual": BT}
            export_graph(
                _Layer(block) if explicit else _Step(block),
                (z, past, past) if explicit else (z, z, past, past),
                out_dir / f"{role}.onnx",
                inputs,
                ["z_next", "k", "v", "residual"],
                {k: v for k, v in axes.items() if k != "inj" or not explicit},
            )
    graphs = {"embed": "embed.onnx", **{role: f"{role}.onnx" for role in roles}, "head": "head.onnx"}
    manifest = {
        **manifest_head(model, model_id),
        "tokenizer": "gpt2",
        "format_of_checkpoint": "programme",
        "max_positions": cfg.max_seq_len,
        "num_params": num_params,
        "residual_eps": RESIDUAL_EPS,
        "empty_prompt": EMPTY_PROMPT,
        "graphs": graphs,
        "graph_sha256": {role: sha256(out_dir / name) for role, name in graphs.items()},
        "programme_config": cfg.to_dict(),
        "semantics": programme_semantics(cfg),
    }
    if explicit:
        manifest.update(explicit_fields(len(roles), roles))
    else:
        manifest.update(
            {
                "default_depth": cfg.deq_max_iter,
                "min_depth": 1,
                "max_depth": min(DEPTH_CAP_MAX, max(DEPTH_MAX, cfg.deq_max_iter)),
                "solvers": list(SOLVERS),
                "starts": list(STARTS),
                "halts": list(HALTS),
                "noise_rng": NOISE_RNG,
                "train_depths": [cfg.deq_max_iter],
                "io": {"embed": EMBED_IO, "step": STEP_IO, "head": HEAD_IO},
            }
        )
    manifest.update(extra or {})
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    report(1.0, "exported")
    return manifest
