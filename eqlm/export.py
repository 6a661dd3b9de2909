"""ONNX export of an EqLM as three self-contained graphs (embed, step, head) plus a JSON manifest (an explicit
transformer's export, one graph per layer, is export_explicit.py's; export_onnx hands it over).

The caller drives the iterations: embed once, call step once per iteration with the keys/values that earlier
positions produced at the same iteration (past_k/past_v, possibly empty), then head. This is what lets the
browser (onnxruntime-web) and the server (onnxruntime, eqlm/decoder.py) cache per-iteration K/V and
decode incrementally with results identical to recomputing the whole sequence.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import torch
from torch import nn

from .export_explicit import export_explicit_onnx
from .limits import DEFAULT_MODEL_ID, DEPTH_CAP_MAX, DEPTH_MAX, DEPTH_MIN, HALTS, SOLVERS, STARTS, model_depths
from .manifest import fixed_depth
from .model import RESIDUAL_EPS, EqLM, relative_residual
from .noise import NOISE_RNG
from .onnx_io import BHP, BHT, BT, EMBED_IO, EMPTY_PROMPT, HEAD_IO, export_embed_and_head, export_graph, manifest_head
from .onnx_io import sha256 as _sha256


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
    """Write embed.onnx, step.onnx, head.onnx (+ step.int8.onnx) and manifest.json; returns the manifest.

    `max_depth` is the model's cap on iterations per token (a fixed depth or the cap on halting), which the runtimes
    enforce: at most limits.DEPTH_CAP_MAX, and not below the model's default depth. An explicit transformer is
    export_explicit.py's (one graph per layer; its depth is its layer count, so max_depth and int8 do not apply).
    """
    if model.model_class == "ExplicitLM":
        return export_explicit_onnx(model, out_dir, model_id=model_id, extra=extra)
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
    if int8:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        quantize_dynamic(str(out_dir / "step.onnx"), str(out_dir / "step.int8.onnx"), weight_type=QuantType.QInt8)
        graphs["step_int8"] = "step.int8.onnx"
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
        "io": {
            "embed": EMBED_IO,
            "step": {
                "inputs": {"z": "[B,T,D]", "inj": "[B,T,D]", "past_k": "[B,H,P,Dh]", "past_v": "[B,H,P,Dh]"},
                "outputs": {"z_next": "[B,T,D]", "k": "[B,H,T,Dh]", "v": "[B,H,T,Dh]", "residual": "[B,T]"},
            },
            "head": HEAD_IO,
        },
        "semantics": {
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
        },
    }
    manifest.update(extra or {})
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=False) + "\n")
    return manifest


def word_realness(texts: list[str], vocabulary: set[str]) -> float:
    """Share of generated words (letters only, lower-cased) that occur in the corpus vocabulary."""
    import re

    words = [w.lower() for t in texts for w in re.findall(r"[A-Za-z]+", t)]
    return sum(w in vocabulary for w in words) / len(words) if words else 0.0


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
    import hashlib
    import time

    from .checkpoint import load_checkpoint
    from .corpus import HELDOUT_FRACTION, load_code_corpus, load_corpus, split
    from .decoder import OnnxEqLM
    from .generation import GenerationRequest, Generator
    from .scoring import bits_per_byte

    model, data = load_checkpoint(checkpoint)
    provenance = data["provenance"]
    train_settings = provenance.get("train_settings") or {}
    stage_corpus = (provenance.get("resolved_stage") or {}).get("corpus") or {}
    corpus_kind = train_settings.get("corpus") or stage_corpus.get("name") or "kjv"
    domain = DOMAINS[corpus_kind]
    limitation = EXPLICIT_LIMITATION if model.model_class == "ExplicitLM" else domain["limitation"]
    max_depth = trained_max_depth(provenance)
    fixed = fixed_depth(export_onnx(model, out_dir, int8=int8, model_id=model_id, max_depth=max_depth))
    depths = [fixed] if fixed else [*range(1, 13), *(d for d in (16, 24, 32, 48, 64, 96, 128) if d <= max_depth)]
    sample_depths = [fixed] if fixed else [2, 4, 8, 12]
    threads = train_settings.get("threads", provenance.get("threads", 2))
    onnx_model = OnnxEqLM(out_dir, threads=2)
    metrics: dict = {
        "model_id": model_id,
        "corpus_kind": corpus_kind,
        "model_class": data["model_class"],
        "num_params": model.num_params(),
        "config": data["config_dict"],
        "checkpoint_sha256": hashlib.sha256(Path(checkpoint).read_bytes()).hexdigest(),
        "training": {
            "steps": provenance.get("steps"),
            "tokens_seen": provenance.get("tokens"),
            "train_seconds": provenance.get("train_seconds"),
            "seed": provenance.get("seed"),
            "hardware": f"CPU (2 shared cores, torch.set_num_threads({threads}))",
            "supervised_depths": data["config_dict"].get("train_depths"),
            "settings": provenance.get("train_settings"),
            "init_checkpoint_sha256": provenance.get("init_checkpoint_sha256"),
        },
        "provenance": {k: provenance.get(k) for k in PROVENANCE_KEYS_FOR_CARD},
        "measured_with": "onnxruntime on the exported fp32 graphs (eqlm/runtime.py: bits_per_byte)",
        "limitations": limitation,
    }
    try:
        corpus, sha = load_code_corpus() if corpus_kind == "code" else load_corpus()
    except (RuntimeError, OSError) as exc:
        log(f"corpus unavailable ({exc}); measuring only the committed slice")
        corpus = None
    if corpus is not None:
        if sha != provenance.get("corpus_sha256"):
            log(f"warning: corpus sha256 {sha} differs from the checkpoint's {provenance.get('corpus_sha256')}")
        _, heldout = split(corpus)
        Path(slice_path).parent.mkdir(parents=True, exist_ok=True)
        Path(slice_path).write_bytes(heldout[:slice_bytes])
        started = time.time()
        full = bits_per_byte(onnx_model, heldout, depths)
        log("held-out bits/byte " + " ".join(f"d{d}={v:.3f}" for d, v in full.items()))
        metrics["held_out_bits_per_byte"] = {str(d): round(v, 4) for d, v in full.items()}
        metrics["held_out"] = {
            "bytes": len(heldout),
            "sha256": hashlib.sha256(heldout).hexdigest(),
            "fraction": HELDOUT_FRACTION,
            "window": onnx_model.max_positions,
            "seconds": round(time.time() - started, 1),
        }
        vocabulary = {w.lower() for w in re.findall(r"[A-Za-z]+", corpus.decode("utf-8", errors="replace"))}
        generator = Generator(out_dir)
        prompts = domain["prompts"]
        samples = {}
        for depth in sample_depths:
            texts = [generator.generate(GenerationRequest(prompt=p, max_tokens=80, depth=depth)).text for p in prompts]
            samples[str(depth)] = {"real_word_share": round(word_realness(texts, vocabulary), 4), "texts": texts}
        metrics["greedy_samples"] = {"prompts": prompts, "by_depth": samples}
    slice_data = Path(slice_path).read_bytes()
    ci = bits_per_byte(onnx_model, slice_data, depths)
    metrics["ci_slice"] = {
        "file": str(Path(slice_path).name),
        "bytes": len(slice_data),
        "sha256": hashlib.sha256(slice_data).hexdigest(),
        "bits_per_byte": {str(d): round(v, 5) for d, v in ci.items()},
    }
    manifest = json.loads((Path(out_dir) / "manifest.json").read_text())
    manifest["metrics"] = {
        "held_out_bits_per_byte": metrics.get("held_out_bits_per_byte", {}),
        "tokens_seen": provenance.get("tokens"),
        "train_seconds": provenance.get("train_seconds"),
    }
    manifest["provenance"] = metrics["provenance"]
    manifest["limitations"] = limitation
    (Path(out_dir) / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    Path(metrics_path).write_text(json.dumps(metrics, indent=2) + "\n")
    return metrics


PROVENANCE_KEYS_FOR_CARD = (
    "config_hash",
    "git_commit",
    "seed",
    "corpus",
    "corpus_sha256",
    "steps",
    "tokens",
    "created",
    "train_seconds",
)
LIMITATION = (
    "A small demo EqLM trained by this portal's own code on one book (the King James Bible, byte-level), on "
    "CPUs or on an accelerator (its provenance names each device). It is not one of the programme's "
    "120M-parameter checkpoints, which this portal does not serve; its numbers say nothing about those models."
)
CODE_LIMITATION = (
    "A small EqLM trained by this portal's own code on Python source (the pinned Django wheel's *.py files, "
    "byte-level) on shared CPUs, as the second-domain member of the live council. It is not one of the programme's "
    "checkpoints; its numbers say nothing about those models."
)
EXPLICIT_LIMITATION = (
    "A small explicit transformer (the head-to-head's baseline: distinct layers, each applied once, no iteration) "
    "trained by this portal's own code on one book (the King James Bible, byte-level) on shared CPUs. It is not an "
    "equilibrium model and not one of the programme's checkpoints; its numbers say nothing about those models."
)
DOMAINS = {
    "kjv": {
        "limitation": LIMITATION,
        "prompts": ["And God said", "The LORD is my shepherd", "In the beginning", "Blessed are the"],
    },
    "code": {
        "limitation": CODE_LIMITATION,
        "prompts": ["def ", "import ", "class Meta:\n", "        return "],
    },
}
