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

from .export_batched import add_batched_step, batched_layer_role
from .limits import DEPTH_CAP_MAX, DEPTH_MAX, HALTS, SOLVERS, STARTS
from .model import RESIDUAL_EPS, relative_residual
from .noise import NOISE_RNG
from .onnx_io import BHP, BHT, BT, EMBED_IO, HEAD_IO, Embed, export_graph, manifest_head
from .onnx_share import sha256, share_weights

TIED_FILE = "tied.bin"  # the token embedding, which is also the head: stored once, read by both graphs
BLOCK_FILE = "block.bin"  # the block's weights, which step and step_batched both read: stored once
EMPTY_PROMPT = "\n"  # GPT-2 id 198: what an empty prompt becomes
STEP_IO = {
    "inputs": {"z": "[B,T,D]", "inj": "[B,T,D]", "past_k": "[B,H,P,Dh]", "past_v": "[B,H,P,Dh]"},
    "outputs": {"z_next": "[B,T,D]", "k": "[B,H,T,Dh]", "v": "[B,H,T,Dh]", "residual": "[B,T]"},
}


class _TiedHead(nn.Module):
    """logits = LN_final(z) W^T / sqrt(d) with W in its [V, D] layout (a Gemm with transB), so the head graph holds
    the very bytes the embedding's Gather reads, and both can point at one file."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, z):
        b, t, d = z.shape
        x = self.model.ln_final(z).reshape(b * t, d)
        logits = torch.nn.functional.linear(x, self.model.embedding.weight)
        return logits.reshape(b, t, -1) / (self.model.config.d_model**0.5)


def untranspose_head(model, vocab_size: int, d_model: int) -> None:
    """The exporter folds W^T into a [D, V] constant for a MatMul; turn that back into Gemm(x, W, transB=1) over W's
    own [V, D] bytes (the MatMul's input is 2-D, as _TiedHead reshapes it)."""
    import numpy as np
    from onnx import helper, numpy_helper

    inits = {t.name: t for t in model.graph.initializer}
    for node in model.graph.node:
        weight = inits.get(node.input[1]) if node.op_type == "MatMul" and len(node.input) == 2 else None
        if weight is not None and list(weight.dims) == [d_model, vocab_size]:
            flipped = numpy_helper.from_array(np.ascontiguousarray(numpy_helper.to_array(weight).T), weight.name)
            weight.CopyFrom(flipped)
            node.op_type = "Gemm"
            node.attribute.append(helper.make_attribute("transB", 1))
            return


def store_tied_once(out_dir: Path, vocab_size: int, d_model: int) -> str:
    """Move the [V, D] matrix out of embed.onnx and head.onnx into one external-data file both reference; returns
    its name. onnxruntime reads external data beside the graph (Python: from the path; the browser: `externalData`)."""
    import onnx
    from onnx.external_data_helper import set_external_data

    models = {role: onnx.load(str(out_dir / f"{role}.onnx")) for role in ("embed", "head")}
    untranspose_head(models["head"], vocab_size, d_model)
    tensors = {}
    for role, model in models.items():
        found = [t for t in model.graph.initializer if list(t.dims) == [vocab_size, d_model]]
        if len(found) != 1:
            raise ValueError(f"{role}.onnx holds {len(found)} [{vocab_size}, {d_model}] matrices, not one")
        tensors[role] = found[0]
    data = tensors["embed"].raw_data
    if data != tensors["head"].raw_data:
        raise ValueError("the embedding and the head matrices differ: the head is not tied")
    (out_dir / TIED_FILE).write_bytes(data)
    for role, model in models.items():
        tensor = tensors[role]
        set_external_data(tensor, location=TIED_FILE, offset=0, length=len(data))
        tensor.ClearField("raw_data")
        tensor.data_location = onnx.TensorProto.EXTERNAL
        onnx.save(model, str(out_dir / f"{role}.onnx"))
    return TIED_FILE


def export_tied_embed_and_head(model: nn.Module, out_dir: Path) -> None:
    ids = torch.zeros(1, 3, dtype=torch.long)
    positions = torch.arange(3).unsqueeze(0)
    export_graph(Embed(model), (ids, positions), out_dir / "embed.onnx", ["input_ids", "positions"], ["inj"],
                 {"input_ids": BT, "positions": BT, "inj": BT})  # fmt: skip
    z = torch.randn(1, 3, model.config.d_model)
    export_graph(_TiedHead(model), (z,), out_dir / "head.onnx", ["z"], ["logits"], {"z": BT, "logits": BT})
    store_tied_once(out_dir, model.config.vocab_size, model.config.d_model)


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


def add_batched_graphs(model, out_dir: Path) -> dict:
    """step_batched.onnx (an explicit model: layer_NN_batched.onnx) beside the graphs (export_batched.py), the block
    (each layer) that the lone and the batched graph both hold stored once; returns the manifest."""
    manifest = add_batched_step(model, out_dir)
    for role in manifest.get("layers") or []:
        manifest = share_weights(out_dir, (role, batched_layer_role(role)), f"{role}.bin")
    return share_weights(out_dir, ("step", "step_batched"), BLOCK_FILE)


def export_programme_onnx(
    model, out_dir: Path, model_id: str, extra: dict | None = None, progress=None, int8: bool = False
) -> dict:
    """Write the graphs and manifest.json of a programme model (EqLM or ExplicitLM) into out_dir (`int8`: and their
    int8 twins, the tied matrix quantised and stored once as tied.int8.bin; eqlm/quantize.py)."""
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
        export_tied_embed_and_head(model, out_dir)
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
        # graphs that read external data: the tied matrix, one file for the embedding and the head
        "external_data": {TIED_FILE: ["embed", "head"]},
        "graph_sha256": {role: sha256(out_dir / name) for role, name in [*graphs.items(), (TIED_FILE, TIED_FILE)]},
        "programme_config": cfg.to_dict(),
        "semantics": programme_semantics(cfg),
        "precisions": ["fp32"],
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
    manifest = add_batched_graphs(model, out_dir)
    if int8:
        from .quantize import add_int8

        report(0.95, "quantising the weights to int8")
        manifest = add_int8(out_dir)
    report(1.0, "exported")
    return manifest
