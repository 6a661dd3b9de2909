"""ONNX export of an EqLM as three self-contained graphs (embed, step, head) plus a JSON manifest (an explicit
transformer's export, one graph per layer, is export_explicit.py's; export_onnx hands it over).

The caller drives the iterations: embed once, call step once per iteration with the keys/values that earlier
positions produced at the same iteration (past_k/past_v, possibly empty), then head. This is what lets the
browser (onnxruntime-web) and the server (onnxruntime, eqlm/decoder.py) cache per-iteration K/V and
decode incrementally with results identical to recomputing the whole sequence.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import torch
from torch import nn

from .demo_metrics import (
    DOMAINS,
    EXPLICIT_LIMITATION,
    annotate_manifest,
    card_metrics,
    ci_slice,
    corpus_kind_of,
    greedy_samples,
    load_demo_corpus,
    measure_heldout,
)
from .export_batched import add_batched_step
from .export_explicit import export_explicit_onnx
from .limits import DEFAULT_MODEL_ID, DEPTH_CAP_MAX, DEPTH_MAX, DEPTH_MIN, HALTS, SOLVERS, STARTS, model_depths
from .manifest import fixed_depth
from .model import RESIDUAL_EPS, EqLM, relative_residual
from .noise import NOISE_RNG
from .onnx_io import BHP, BHT, BT, EMBED_IO, EMPTY_PROMPT, HEAD_IO, export_embed_and_head, export_graph, manifest_head
from .onnx_share import sha256 as _sha256
from .quantize import add_int8

STEP_IO = {
    "inputs": {"z": "[B,T,D]", "inj": "[B,T,D]", "past_k": "[B,H,P,Dh]", "past_v": "[B,H,P,Dh]"},
    "outputs": {"z_next": "[B,T,D]", "k": "[B,H,T,Dh]", "v": "[B,H,T,Dh]", "residual": "[B,T]"},
}
# what a client needs to drive the graphs as the server does
SEMANTICS = {
    "iteration": "z_next = LN(z + Attn(z) + MLP(z) + inj); iteration i of a position attends to the K/V "
    "that positions before it produced at iteration i (past_k/past_v, P may be 0) and, causally, to the "
    "new positions' own K/V, which step returns for caching (computed from its input z).",
    "start": "z = 0 for every prompt position (cold); the prompt is processed as one batch.",
    "noise_start": "start 'noise': every position, the prompt's included, starts at z = N(0, 1) instead of "
    "0: position p takes normals p*D .. p*D+D-1 of the stream named by noise_rng, seeded by the request's "
    "seed (0 when none); the positions iterate against the cache as from zero (nothing is settled).",
    "fixed_depth": "every position runs exactly `depth` iterations; the cache holds `depth` slots.",
    "halting": "with tol, a position stops after the iteration whose residual < tol (or at the cap); its "
    "state stays frozen and its K/V for every later iteration slot are computed from that frozen state "
    "(one step call with empty past gives them).",
    "kl_halting": "halt 'kl': as halting, but a position stops after the iteration i at which "
    "KL(p_i || p_(i-1)) < tol, in nats, p_i = softmax(head(z_i)) in float64 and p_0 from the start state.",
    "warm_start": "a generated token's z starts at the previous position's final z instead of 0, and "
    "every position's K/V in every iteration slot are those of its final state (the prompt's included), so "
    "a new position iterates against its context's solved states from its first iteration on.",
    "empty_prompt": "an empty prompt is replaced by a single newline byte.",
    "context": "positions are absolute, 0..max_positions-1; the prompt keeps its last bytes when too long.",
}


class _Step(nn.Module):
    def __init__(self, model: EqLM):
        super().__init__()
        self.block = model.block

    def forward(self, z, inj, past_k, past_v):
        z_next, k, v = self.block(z, inj, past_k, past_v)
        return z_next, k, v, relative_residual(z_next, z)


def export_onnx(
    model,
    out_dir: Path,
    model_id: str = DEFAULT_MODEL_ID,
    extra: dict | None = None,
    int8: bool = False,
    max_depth: int = DEPTH_MAX,
) -> dict:
    """Write embed.onnx, step.onnx, head.onnx, step_batched.onnx and manifest.json (`int8`: and their int8 twins,
    eqlm/quantize.py); returns the manifest. An explicit transformer gets layer_NN_batched.onnx instead.

    `max_depth` is the model's cap on iterations per token (a fixed depth or the cap on halting), which the runtimes
    enforce: at most limits.DEPTH_CAP_MAX, and not below the model's default depth. An explicit transformer is
    export_explicit.py's (one graph per layer; its depth is its layer count, so max_depth does not apply).
    """
    if model.model_class == "ExplicitLM":
        export_explicit_onnx(model, out_dir, model_id=model_id, extra=extra)
        manifest = add_batched_step(model, out_dir)  # layer_NN_batched.onnx beside the layers (export_batched.py)
        return add_int8(out_dir) if int8 else manifest
    model_depths({"default_depth": model.config.default_depth, "max_depth": max_depth})
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    model = model.eval()
    cfg = model.config
    h, dh, d = cfg.n_heads, cfg.head_dim, cfg.d_model
    z = torch.randn(1, 3, d)
    past = torch.randn(1, h, 2, dh)
    with torch.no_grad():
        export_embed_and_head(model, out_dir)
        export_graph(
            _Step(model),
            (z, z, past, past),
            out_dir / "step.onnx",
            ["z", "inj", "past_k", "past_v"],
            ["z_next", "k", "v", "residual"],
            {"z": BT, "inj": BT, "past_k": BHP, "past_v": BHP, "z_next": BT, "k": BHT, "v": BHT, "residual": BT},
        )
    graphs = {"embed": "embed.onnx", "step": "step.onnx", "head": "head.onnx"}
    manifest = {
        **manifest_head(model, model_id),
        "max_positions": cfg.max_positions,
        "default_depth": cfg.default_depth,
        # the request limits (eqlm/limits.py) and this model's depth cap, so that a client reads them instead of
        # repeating them
        "min_depth": DEPTH_MIN,
        "max_depth": max_depth,
        "solvers": list(SOLVERS),
        "starts": list(STARTS),
        "halts": list(HALTS),
        "noise_rng": NOISE_RNG,
        "train_depths": cfg.train_depths,
        "residual_eps": RESIDUAL_EPS,
        "empty_prompt": EMPTY_PROMPT,
        "num_params": model.num_params(),
        "graphs": graphs,
        # Servers address each graph by its content (the file URL carries this sha256), so a client that read
        # this manifest can never be handed a graph from another export.
        "graph_sha256": {role: _sha256(out_dir / name) for role, name in graphs.items()},
        "io": {"embed": EMBED_IO, "step": copy.deepcopy(STEP_IO), "head": HEAD_IO},
        "semantics": dict(SEMANTICS),
        "precisions": ["fp32"],
    }
    manifest.update(extra or {})
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=False) + "\n")
    manifest = add_batched_step(model, out_dir)  # step_batched.onnx beside the graphs (export_batched.py)
    return add_int8(out_dir) if int8 else manifest


def trained_max_depth(provenance: dict) -> int:
    """The depth cap a checkpoint is served with: the deepest depth its stage's solve drew (solve.depth.max) when that
    goes past limits.DEPTH_MAX, up to DEPTH_CAP_MAX; DEPTH_MAX otherwise (a fixed-depth or older recipe)."""
    solve = (provenance.get("resolved_stage") or {}).get("solve") or {}
    deepest = (solve.get("depth") or {}).get("max") if solve.get("kind") == "equilibrium" else None
    return max(DEPTH_MAX, min(DEPTH_CAP_MAX, int(deepest or DEPTH_MAX)))


def export_demo(
    checkpoint: Path,
    out_dir: Path,
    metrics_path: Path,
    slice_path: Path,
    slice_bytes: int = 4096,
    int8: bool = False,
    log=print,
    model_id: str = DEFAULT_MODEL_ID,
) -> dict:
    """Export a checkpoint for the demo, measure it with the ONNX files and write metrics.json + manifest.json.

    The model's depth cap is `trained_max_depth`: 128 for a recipe that trained depths up to 128, else 64. Held-out
    bits/byte at depths 1-12 and deeper, up to the cap (an explicit transformer: at its one depth, its layer count),
    is measured on the whole held-out slice of the corpus (the last 5%) when the corpus is available, and always on
    the small committed slice that CI re-measures.
    """
    from .checkpoint import load_checkpoint
    from .corpus import split
    from .decoder import OnnxEqLM

    model, data = load_checkpoint(checkpoint)
    provenance = data["provenance"]
    corpus_kind = corpus_kind_of(provenance)
    domain = DOMAINS[corpus_kind]
    limitation = EXPLICIT_LIMITATION if model.model_class == "ExplicitLM" else domain["limitation"]
    max_depth = trained_max_depth(provenance)
    fixed = fixed_depth(export_onnx(model, out_dir, int8=int8, model_id=model_id, max_depth=max_depth))
    depths = [fixed] if fixed else [*range(1, 13), *(d for d in (16, 24, 32, 48, 64, 96, 128) if d <= max_depth)]
    sample_depths = [fixed] if fixed else [2, 4, 8, 12]
    onnx_model = OnnxEqLM(out_dir, threads=2)
    metrics = card_metrics(model, data, checkpoint, model_id, corpus_kind, limitation)
    corpus, sha = load_demo_corpus(corpus_kind, log)
    if corpus is not None:
        if sha != provenance.get("corpus_sha256"):
            log(f"warning: corpus sha256 {sha} differs from the checkpoint's {provenance.get('corpus_sha256')}")
        _, heldout = split(corpus)
        Path(slice_path).parent.mkdir(parents=True, exist_ok=True)
        Path(slice_path).write_bytes(heldout[:slice_bytes])
        measure_heldout(metrics, onnx_model, heldout, depths, log)
        metrics["greedy_samples"] = greedy_samples(out_dir, corpus, domain["prompts"], sample_depths)
    metrics["ci_slice"] = ci_slice(onnx_model, slice_path, depths)
    if int8:  # the int8 graphs against the fp32 ones on the held-out slice, into the manifest's `int8` block
        from .quantize_measure import measure_and_record, windows_of

        text = Path(slice_path).read_bytes()
        windows = windows_of(list(text), onnx_model.manifest)
        measure_and_record(out_dir, windows, f"the held-out slice ({len(text):,} bytes)")
    annotate_manifest(out_dir, metrics, provenance, limitation)
    Path(metrics_path).write_text(json.dumps(metrics, indent=2) + "\n")
    return metrics
