"""What every ONNX export shares: torch.onnx.export with the project's settings and the embed and head graphs
(eqlm/export.py writes an EqLM's graphs, eqlm/export_explicit.py an explicit transformer's; the content hash that
addresses each graph is eqlm/onnx_share.py's)."""

from __future__ import annotations

import warnings
from pathlib import Path

import torch
from torch import nn

OPSET = 17
MANIFEST_FORMAT = "eqlm-onnx-v1"
EMPTY_PROMPT = "\n"
BT = {0: "batch", 1: "new"}  # dynamic axes: [B, T, ...]
BHP = {0: "batch", 2: "past"}  # [B, H, P, Dh]
BHT = {0: "batch", 2: "new"}  # [B, H, T, Dh]


class Embed(nn.Module):
    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids, positions):
        return self.model.embed(input_ids, positions)


class Head(nn.Module):
    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, z):
        return self.model.head(z)


def export_graph(module: nn.Module, args: tuple, path: Path, inputs: list[str], outputs: list[str], axes: dict) -> None:
    """One self-contained graph file (no external data), traced at OPSET with the given dynamic axes."""
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


def export_embed_and_head(model: nn.Module, out_dir: Path) -> None:
    """embed.onnx (input_ids, positions -> inj) and head.onnx (z -> logits)."""
    ids = torch.zeros(1, 3, dtype=torch.long)
    z = torch.randn(1, 3, model.config.d_model)
    export_graph(
        Embed(model),
        (ids, ids),
        out_dir / "embed.onnx",
        ["input_ids", "positions"],
        ["inj"],
        {"input_ids": BT, "positions": BT, "inj": BT},
    )
    export_graph(Head(model), (z,), out_dir / "head.onnx", ["z"], ["logits"], {"z": BT, "logits": BT})


EMBED_IO = {"inputs": {"input_ids": "[B,T] int64", "positions": "[B,T] int64"}, "outputs": {"inj": "[B,T,D]"}}
HEAD_IO = {"inputs": {"z": "[B,T,D]"}, "outputs": {"logits": "[B,T,V]"}}


def manifest_head(model: nn.Module, model_id: str) -> dict:
    """The manifest fields every export starts with: its format, the model and its tokenizer and shapes."""
    cfg = model.config
    return {
        "format": MANIFEST_FORMAT,
        "model_id": model_id,
        "model_class": model.model_class,
        "tokenizer": "utf-8 bytes (token id = byte value)",
        "vocab_size": cfg.vocab_size,
        "d_model": cfg.d_model,
        "n_heads": cfg.n_heads,
        "head_dim": cfg.head_dim,
    }
