"""The batched step graph: one iteration for one new position in each of B rows, each row with its own past.

Today's step graph (export.py) takes one past [B, H, P, Dh] that every row shares in length, so rows with different
contexts cannot run together. `step_batched` adds `past_valid` [B, P] (1.0 on a row's cached positions, 0.0 on the
padding after them): a row's new position attends to its own valid past and to itself. Its own key and value sit
right after its valid past, before the padding, as they sit alone (a scatter writes them there): the attention then
adds the same terms in the same slots as the step graph does. A row beside longer ones still differs from alone by
about an ulp on AVX-512, where its padding slots change the kernels' sums (with the new position after the padding, 3
times as many rows differed, and an int8 request drew another token). Positions are not an input:
they enter through the embedding (inj), which each row computes at its own position. The new position's K/V are
returned for each row to cache, as step's are.

`add_batched_step` writes step_batched.onnx beside an export's graphs and lists it in the manifest (graphs,
graph_sha256, io); today's graphs stay as they were. An explicit transformer's layers differ by slot, so it gets one
batched graph per layer instead, `layer_NN_batched` (listed in order as `batched_layers`): layer_NN's inputs plus
past_valid, its outputs as they are. The portal's EqLM block and layer and the programme's (eqlm.programme.model;
export_programme.py) each have their own.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from .model import Block, relative_residual
from .onnx_io import export_graph
from .onnx_share import sha256 as _sha256

BATCHED_STEP_IO = {
    "inputs": {"z": "[B,1,D]", "inj": "[B,1,D]", "past_k": "[B,H,P,Dh]", "past_v": "[B,H,P,Dh]", "past_valid": "[B,P]"},
    "outputs": {"z_next": "[B,1,D]", "k": "[B,H,1,Dh]", "v": "[B,H,1,Dh]", "residual": "[B,1]"},
}
BATCHED_SEMANTICS = (
    "step_batched: one iteration of one new position in each row, as step with T = 1, where row b attends only to "
    "its cached positions with past_valid[b] = 1 and to itself (past_valid[b] is 1 on the row's first positions and "
    "0 on the padding after them); rows at different positions, iteration slots and depths run together."
)
BATCHED_LAYERS_SEMANTICS = (
    "batched_layers[i]: layer i (graphs[layers[i]]) for one new position in each row, where row b attends only to "
    "its cached positions with past_valid[b] = 1 and to itself (past_valid[b] is 1 on the row's first positions and "
    "0 on the padding after them); rows at different positions run together."
)


class BatchedStep(nn.Module):
    """Block.forward's cached branch for T = 1 with a per-row mask over the past."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.block = model.block

    def forward(self, z, inj, past_k, past_v, past_valid):
        blk = self.block
        b, t, d = z.shape
        h = blk._input(z, inj)
        attn_in = blk.ln_attn_in(h) if blk.sandwich else h
        q, k, v = blk._qkv(attn_in)
        keys, values, visible = _placed(past_k, past_v, k, v, past_valid)
        att = blk._attend(q, keys, values, visible)
        att = blk.proj(att.transpose(1, 2).reshape(b, t, d))
        if blk.sandwich:
            mlp = blk.ln_mlp_out(blk.fc2(F.gelu(blk.fc1(blk.ln_mlp_in(h)))))
            att = blk.ln_attn_out(att)
        else:
            mlp = blk.fc2(F.gelu(blk.fc1(h)))
        skip = h if blk.state_skip == 1.0 else blk.state_skip * h
        out = blk.ln(skip + att + mlp) if blk.concat else blk.ln(skip + att + mlp + inj)
        return out, k, v, relative_residual(out, z)


def _placed(past_k, past_v, k, v, past_valid):
    """(keys, values [B, H, P + 1, Dh], visible [B, 1, 1, P + 1]): each row's valid past, then its new position's
    key and value, then its padding, so a row's attention adds the terms that it adds alone, in the same order."""
    # the slots 0..P, from the past's dynamic length (a traced arange would fix the exported length)
    slots = torch.cumsum(torch.ones_like(torch.cat([past_valid, past_valid[:, :1]], dim=1)), dim=1) - 1.0
    count = past_valid.sum(dim=1, keepdim=True)  # [B, 1]: the row's valid past (a prefix)
    # slot n of each row and head: a scatter writes only the new rows there (a Where over every slot cost 8-15% of a
    # batch-8 call of the 121M and 124M models' graphs, and gives the same values)
    own = count.long()[:, :, None, None].expand(-1, k.shape[1], 1, k.shape[3])  # [B, H, 1, Dh]
    keys = torch.cat([past_k, torch.zeros_like(k)], dim=2).scatter(2, own, k)
    values = torch.cat([past_v, torch.zeros_like(v)], dim=2).scatter(2, own, v)
    return keys, values, (slots <= count)[:, None, None, :]


def _programme_block(blk, z, inj, past_k, past_v, past_valid):
    """The programme block's forward (eqlm.programme.model) for T = 1 with a per-row mask over the past."""
    b, t, d = z.shape
    a = z if blk.postln else blk.ln1(z)
    q, k, v = blk._heads(blk.q_proj(a)), blk._heads(blk.k_proj(a)), blk._heads(blk.v_proj(a))
    keys, values, visible = _placed(past_k, past_v, k, v, past_valid)
    scores = torch.matmul(q, keys.transpose(-2, -1)) / (blk.head_dim**0.5)
    weights = F.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1)
    attn = blk.out_proj(torch.matmul(weights, values).transpose(1, 2).contiguous().reshape(b, t, d))
    injection = torch.sigmoid(blk.input_gate(inj)) * inj
    if blk.postln:
        h = blk.ln1(z + attn + injection)
        out = blk.ln2(h + blk.fc2(F.relu(blk.fc1(h))))
    else:
        ff = blk.fc2(F.relu(blk.fc1(blk.ln2(z + attn))))
        out = (1.0 - blk.damping) * z + blk.damping * (z + (attn + ff + injection))
    return out, k, v, relative_residual(out, z)


class ProgrammeBatchedStep(nn.Module):
    """The programme block's forward (eqlm.programme.model) for T = 1 with a per-row mask over the past."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.block = model.block

    def forward(self, z, inj, past_k, past_v, past_valid):
        return _programme_block(self.block, z, inj, past_k, past_v, past_valid)


class ProgrammeBatchedLayer(nn.Module):
    """One layer of the programme's ExplicitLM (its block, the injection fed zeros) for T = 1, per-row masked."""

    def __init__(self, block: nn.Module):
        super().__init__()
        self.block = block

    def forward(self, z, past_k, past_v, past_valid):
        return _programme_block(self.block, z, torch.zeros_like(z), past_k, past_v, past_valid)


class BatchedLayer(nn.Module):
    """TransformerLayer.forward (the portal's ExplicitLM) for T = 1 with a per-row mask over the past."""

    def __init__(self, layer: nn.Module):
        super().__init__()
        self.layer = layer

    def forward(self, z, past_k, past_v, past_valid):
        lay = self.layer
        b, t, d = z.shape
        q, k, v = Block._qkv(lay, lay.ln_attn(z))
        keys, values, visible = _placed(past_k, past_v, k, v, past_valid)
        att = Block._attend(lay, q, keys, values, visible)
        x = z + lay.proj(att.transpose(1, 2).reshape(b, t, d))
        out = x + lay.fc2(F.gelu(lay.fc1(lay.ln_mlp(x))))
        return out, k, v, relative_residual(out, z)


def batched_layer_role(role: str) -> str:
    """layer_03 -> layer_03_batched"""
    return f"{role}_batched"


def add_batched_step(model: nn.Module, out_dir: Path) -> dict:
    """Write step_batched.onnx into an EqLM export's folder and list it in its manifest; returns the manifest."""
    out_dir = Path(out_dir)
    path = out_dir / "manifest.json"
    manifest = json.loads(path.read_text())
    cfg = model.config
    z = torch.randn(2, 1, cfg.d_model)
    past = torch.randn(2, cfg.n_heads, 3, cfg.head_dim)
    valid = torch.tensor([[1.0, 1.0, 1.0], [0.0, 1.0, 1.0]])
    axes = {0: "batch"}
    bp = {0: "batch", 2: "past"}
    if getattr(model, "model_class", "EqLM") == "ExplicitLM":
        return _add_batched_layers(model, out_dir, manifest, (z, past, past, valid), axes, bp)
    with torch.no_grad():
        export_graph(
            (ProgrammeBatchedStep if hasattr(model.block, "q_proj") else BatchedStep)(model.eval()),
            (z, z, past, past, valid),
            out_dir / "step_batched.onnx",
            ["z", "inj", "past_k", "past_v", "past_valid"],
            ["z_next", "k", "v", "residual"],
            {"z": axes, "inj": axes, "past_k": bp, "past_v": bp, "past_valid": {0: "batch", 1: "past"}}
            | {"z_next": axes, "k": axes, "v": axes, "residual": axes},
        )
    manifest["graphs"]["step_batched"] = "step_batched.onnx"
    manifest.setdefault("graph_sha256", {})["step_batched"] = _sha256(out_dir / "step_batched.onnx")
    manifest.setdefault("io", {})["step_batched"] = BATCHED_STEP_IO
    manifest.setdefault("semantics", {})["batched"] = BATCHED_SEMANTICS
    path.write_text(json.dumps(manifest, indent=2, sort_keys=False) + "\n")
    return manifest


def _add_batched_layers(model: nn.Module, out_dir: Path, manifest: dict, example: tuple, axes: dict, bp: dict) -> dict:
    """layer_NN_batched.onnx for each layer of an explicit transformer, listed in order as `batched_layers`."""
    wrap = ProgrammeBatchedLayer if hasattr(model.layers[0], "q_proj") else BatchedLayer
    roles = []
    with torch.no_grad():
        for role, layer in zip(manifest["layers"], model.layers, strict=True):
            batched = batched_layer_role(role)
            export_graph(
                wrap(layer.eval()),
                example,
                out_dir / f"{batched}.onnx",
                ["z", "past_k", "past_v", "past_valid"],
                ["z_next", "k", "v", "residual"],
                {"z": axes, "past_k": bp, "past_v": bp, "past_valid": {0: "batch", 1: "past"}}
                | {"z_next": axes, "k": axes, "v": axes, "residual": axes},
            )
            manifest["graphs"][batched] = f"{batched}.onnx"
            manifest.setdefault("graph_sha256", {})[batched] = _sha256(out_dir / f"{batched}.onnx")
            roles.append(batched)
    manifest["batched_layers"] = roles
    io = {side: {k: v for k, v in names.items() if k != "inj"} for side, names in BATCHED_STEP_IO.items()}
    manifest.setdefault("io", {})["layer_batched"] = io
    manifest.setdefault("semantics", {})["batched"] = BATCHED_LAYERS_SEMANTICS
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=False) + "\n")
    return manifest
