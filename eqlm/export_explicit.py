"""ONNX export of an explicit transformer (ExplicitLM): embed, one graph per layer, head, and a JSON manifest.

The runtimes drive it as they drive an EqLM, slot by slot, with one difference the manifest states: slot i applies
layer i's graph (`layers` lists their roles in order) to the previous slot's output, starting from the embedding.
Each layer graph takes (z, past_k, past_v) and returns (z_next, k, v, residual), the keys and values computed from
its input, so caching each layer's K/V over positions makes incremental decoding equal the whole sequence's forward
pass. It takes no `inj` (the input is embedded once); the runtimes pass a session only the inputs it declares.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

from .limits import DEFAULT_MODEL_ID
from .model import RESIDUAL_EPS, ExplicitLM, relative_residual
from .onnx_io import (
    BHP,
    BHT,
    BT,
    EMBED_IO,
    EMPTY_PROMPT,
    HEAD_IO,
    export_embed_and_head,
    export_graph,
    manifest_head,
)
from .onnx_share import sha256

SOLVERS = ["picard"]  # one pass through the layers; no fixed point to solve, no other solver


class _Layer(nn.Module):
    def __init__(self, layer: nn.Module):
        super().__init__()
        self.layer = layer

    def forward(self, z, past_k, past_v):
        z_next, k, v = self.layer(z, past_k, past_v)
        return z_next, k, v, relative_residual(z_next, z)


def layer_role(index: int) -> str:
    return f"layer_{index:02d}"


def controls_note(n_layers: int) -> str:
    """The one sentence the dial shows beside its fixed controls."""
    return (
        f"An explicit transformer: {n_layers} distinct layers, each applied once, from the embedding of the input. "
        f"Its depth is its layer count ({n_layers}); it has no tolerance, solver, start or halting rule to choose."
    )


def export_explicit_onnx(
    model: ExplicitLM, out_dir: Path, model_id: str = DEFAULT_MODEL_ID, extra: dict | None = None
) -> dict:
    """Write embed.onnx, layer_00.onnx .. layer_<n-1>.onnx, head.onnx and manifest.json; returns the manifest."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    model = model.eval()
    cfg = model.config
    n = len(model.layers)
    h, dh, d = cfg.n_heads, cfg.head_dim, cfg.d_model
    z = torch.randn(1, 3, d)
    past = torch.randn(1, h, 2, dh)
    roles = [layer_role(i) for i in range(n)]
    with torch.no_grad():
        export_embed_and_head(model, out_dir)
        for role, layer in zip(roles, model.layers, strict=True):
            export_graph(
                _Layer(layer),
                (z, past, past),
                out_dir / f"{role}.onnx",
                ["z", "past_k", "past_v"],
                ["z_next", "k", "v", "residual"],
                {"z": BT, "past_k": BHP, "past_v": BHP, "z_next": BT, "k": BHT, "v": BHT, "residual": BT},
            )
    graphs = {"embed": "embed.onnx", **{role: f"{role}.onnx" for role in roles}, "head": "head.onnx"}
    manifest = {
        **manifest_head(model, model_id),
        "n_layers": n,
        "max_positions": cfg.max_positions,
        # its depth is its layer count: the only depth a request may name (eqlm/manifest.py holds requests to it)
        "default_depth": n,
        "min_depth": n,
        "max_depth": n,
        "solvers": list(SOLVERS),
        "starts": [],
        "halts": [],
        "controls_note": controls_note(n),
        "residual_eps": RESIDUAL_EPS,
        "empty_prompt": EMPTY_PROMPT,
        "num_params": model.num_params(),
        "graphs": graphs,
        "layers": roles,  # slot i runs graphs[layers[i]]
        "graph_sha256": {role: sha256(out_dir / name) for role, name in graphs.items()},
        "io": {
            "embed": EMBED_IO,
            "layer": {
                "inputs": {"z": "[B,T,D]", "past_k": "[B,H,P,Dh]", "past_v": "[B,H,P,Dh]"},
                "outputs": {"z_next": "[B,T,D]", "k": "[B,H,T,Dh]", "v": "[B,H,T,Dh]", "residual": "[B,T]"},
            },
            "head": HEAD_IO,
        },
        "semantics": {
            "layers": f"a standard pre-LN transformer of {n} distinct layers (x + Attn(LN(x)), then + MLP(LN(x))); "
            "slot i applies layer i (graphs[layers[i]]) to slot i-1's output, once; head applies the final "
            "LayerNorm and the tied output projection.",
            "start": "the start state is the embedding (token + position), not zero; the input is embedded once and "
            "never re-injected (the layer graphs take no inj).",
            "cache": f"the cache holds one K/V slot per layer ({n}): layer i of a new position attends to the K/V "
            "that layer i computed from the inputs of the positions before it (past_k/past_v, P may be 0) and, "
            "causally, to the new positions' own, which the layer returns for caching; decoding one token at a time "
            "equals the forward pass over the whole sequence.",
            "fixed_depth": f"every position runs all {n} layers: the depth is the layer count, the only one there is.",
            "controls": "no halting, no tol, no solver but 'picard' (the plain pass), no start and no warm start: "
            "there is no fixed point to solve. The layers' residual output is each layer's relative update, not a "
            "fixed-point residual; the runtimes report no residual for this model.",
            "empty_prompt": "an empty prompt is replaced by a single newline byte.",
            "context": "positions are absolute, 0..max_positions-1; the prompt keeps its last bytes when too long.",
        },
    }
    manifest.update(extra or {})
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=False) + "\n")
    return manifest
