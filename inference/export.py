"""ONNX export of an EqLM as three self-contained graphs (embed, step, head) plus a JSON manifest.

The caller drives the iterations: embed once, call step once per iteration with the keys/values that earlier
positions produced at the same iteration (past_k/past_v, possibly empty), then head. This is what lets the
browser (onnxruntime-web) and the server (onnxruntime, inference/generation.py) cache per-iteration K/V and
decode incrementally with results identical to recomputing the whole sequence.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import torch
from torch import nn

from .eqlm import RESIDUAL_EPS, EqLM, relative_residual

OPSET = 17
MANIFEST_FORMAT = "eqlm-onnx-v1"
MAX_DEPTH = 32
EMPTY_PROMPT = "\n"


class _Embed(nn.Module):
    def __init__(self, model: EqLM):
        super().__init__()
        self.model = model

    def forward(self, input_ids, positions):
        return self.model.embed(input_ids, positions)


class _Step(nn.Module):
    def __init__(self, model: EqLM):
        super().__init__()
        self.block = model.block

    def forward(self, z, inj, past_k, past_v):
        z_next, k, v = self.block(z, inj, past_k, past_v)
        return z_next, k, v, relative_residual(z_next, z)


class _Head(nn.Module):
    def __init__(self, model: EqLM):
        super().__init__()
        self.model = model

    def forward(self, z):
        return self.model.head(z)


def _export(module: nn.Module, args: tuple, path: Path, inputs: list[str], outputs: list[str], axes: dict) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            args,
            str(path),
            dynamo=False,
            input_names=inputs,
            output_names=outputs,
            dynamic_axes=axes,
            opset_version=OPSET,
            do_constant_folding=True,
            external_data=False,
        )


def export_onnx(
    model: EqLM,
    out_dir: Path,
    model_id: str = "eqlm-demo",
    extra: dict | None = None,
    int8: bool = False,
) -> dict:
    """Write embed.onnx, step.onnx, head.onnx (+ step.int8.onnx) and manifest.json; returns the manifest."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    model = model.eval()
    cfg = model.config
    h, dh, d = cfg.n_heads, cfg.head_dim, cfg.d_model
    ids = torch.zeros(1, 3, dtype=torch.long)
    z = torch.randn(1, 3, d)
    past = torch.randn(1, h, 2, dh)
    bt = {0: "batch", 1: "new"}
    bhp = {0: "batch", 2: "past"}
    bht = {0: "batch", 2: "new"}
    with torch.no_grad():
        _export(
            _Embed(model),
            (ids, ids),
            out_dir / "embed.onnx",
            ["input_ids", "positions"],
            ["inj"],
            {"input_ids": bt, "positions": bt, "inj": bt},
        )
        _export(
            _Step(model),
            (z, z, past, past),
            out_dir / "step.onnx",
            ["z", "inj", "past_k", "past_v"],
            ["z_next", "k", "v", "residual"],
            {"z": bt, "inj": bt, "past_k": bhp, "past_v": bhp, "z_next": bt, "k": bht, "v": bht, "residual": bt},
        )
        _export(_Head(model), (z,), out_dir / "head.onnx", ["z"], ["logits"], {"z": bt, "logits": bt})
    graphs = {"embed": "embed.onnx", "step": "step.onnx", "head": "head.onnx"}
    if int8:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        quantize_dynamic(str(out_dir / "step.onnx"), str(out_dir / "step.int8.onnx"), weight_type=QuantType.QInt8)
        graphs["step_int8"] = "step.int8.onnx"
    manifest = {
        "format": MANIFEST_FORMAT,
        "model_id": model_id,
        "model_class": model.model_class,
        "tokenizer": "utf-8 bytes (token id = byte value)",
        "vocab_size": cfg.vocab_size,
        "d_model": d,
        "n_heads": h,
        "head_dim": dh,
        "max_positions": cfg.max_positions,
        "default_depth": cfg.default_depth,
        "max_depth": MAX_DEPTH,
        "train_depths": cfg.train_depths,
        "residual_eps": RESIDUAL_EPS,
        "empty_prompt": EMPTY_PROMPT,
        "num_params": model.num_params(),
        "graphs": graphs,
        "io": {
            "embed": {
                "inputs": {"input_ids": "[B,T] int64", "positions": "[B,T] int64"},
                "outputs": {"inj": "[B,T,D]"},
            },
            "step": {
                "inputs": {"z": "[B,T,D]", "inj": "[B,T,D]", "past_k": "[B,H,P,Dh]", "past_v": "[B,H,P,Dh]"},
                "outputs": {"z_next": "[B,T,D]", "k": "[B,H,T,Dh]", "v": "[B,H,T,Dh]", "residual": "[B,T]"},
            },
            "head": {"inputs": {"z": "[B,T,D]"}, "outputs": {"logits": "[B,T,V]"}},
        },
        "semantics": {
            "iteration": "z_next = LN(z + Attn(z) + MLP(z) + inj); iteration i of a position attends to the K/V "
            "that positions before it produced at iteration i (past_k/past_v, P may be 0) and, causally, to the "
            "new positions' own K/V, which step returns for caching (computed from its input z).",
            "start": "z = 0 for every prompt position (cold); the prompt is processed as one batch.",
            "fixed_depth": "every position runs exactly `depth` iterations; the cache holds `depth` slots.",
            "halting": "with tol, a position stops after the iteration whose residual < tol (or at the cap); its "
            "state stays frozen and its K/V for every later iteration slot are computed from that frozen state "
            "(one step call with empty past gives them).",
            "warm_start": "a generated token's z starts at the previous position's final z instead of 0.",
            "empty_prompt": "an empty prompt is replaced by a single newline byte.",
            "context": "positions are absolute, 0..max_positions-1; the prompt keeps its last bytes when too long.",
        },
    }
    manifest.update(extra or {})
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=False) + "\n")
    return manifest
