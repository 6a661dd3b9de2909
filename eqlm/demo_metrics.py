"""What export_demo measures and writes about an exported demo model: its card's metrics, held-out bits/byte on the
corpus and on the committed CI slice, greedy samples with their real-word share, and its limitations by domain."""

from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path

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


def word_realness(texts: list[str], vocabulary: set[str]) -> float:
    """Share of generated words (letters only, lower-cased) that occur in the corpus vocabulary."""
    import re

    words = [w.lower() for t in texts for w in re.findall(r"[A-Za-z]+", t)]
    return sum(w in vocabulary for w in words) / len(words) if words else 0.0


def corpus_kind_of(provenance: dict) -> str:
    """The corpus a checkpoint was trained on ("kjv" or "code"), from its settings or its resolved stage."""
    train_settings = provenance.get("train_settings") or {}
    stage_corpus = (provenance.get("resolved_stage") or {}).get("corpus") or {}
    return train_settings.get("corpus") or stage_corpus.get("name") or "kjv"


def card_metrics(model, data: dict, checkpoint: Path, model_id: str, corpus_kind: str, limitation: str) -> dict:
    """The metrics that need no measurement: the model, its training and provenance, its limitations."""
    provenance = data["provenance"]
    train_settings = provenance.get("train_settings") or {}
    threads = train_settings.get("threads", provenance.get("threads", 2))
    return {
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


def load_demo_corpus(corpus_kind: str, log) -> tuple[bytes | None, str | None]:
    """(bytes, sha256) of the checkpoint's corpus, or (None, None) when it is not available here."""
    from .corpus import load_code_corpus, load_corpus

    try:
        return load_code_corpus() if corpus_kind == "code" else load_corpus()
    except (RuntimeError, OSError) as exc:
        log(f"corpus unavailable ({exc}); measuring only the committed slice")
        return None, None


def measure_heldout(metrics: dict, onnx_model, heldout: bytes, depths: list[int], log) -> None:
    """Held-out bits/byte at `depths` on the whole held-out slice, into metrics."""
    from .corpus import HELDOUT_FRACTION
    from .scoring import bits_per_byte

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


def greedy_samples(out_dir: Path, corpus: bytes, prompts: list[str], sample_depths: list[int]) -> dict:
    """Greedy continuations of the domain's prompts at each sample depth, with the share of real words in them."""
    from .generation import GenerationRequest, Generator

    vocabulary = {w.lower() for w in re.findall(r"[A-Za-z]+", corpus.decode("utf-8", errors="replace"))}
    generator = Generator(out_dir)
    samples = {}
    for depth in sample_depths:
        texts = [generator.generate(GenerationRequest(prompt=p, max_tokens=80, depth=depth)).text for p in prompts]
        samples[str(depth)] = {"real_word_share": round(word_realness(texts, vocabulary), 4), "texts": texts}
    return {"prompts": prompts, "by_depth": samples}


def ci_slice(onnx_model, slice_path: Path, depths: list[int]) -> dict:
    """Bits/byte at `depths` on the small committed slice that CI re-measures."""
    from .scoring import bits_per_byte

    slice_data = Path(slice_path).read_bytes()
    ci = bits_per_byte(onnx_model, slice_data, depths)
    return {
        "file": str(Path(slice_path).name),
        "bytes": len(slice_data),
        "sha256": hashlib.sha256(slice_data).hexdigest(),
        "bits_per_byte": {str(d): round(v, 5) for d, v in ci.items()},
    }


def annotate_manifest(out_dir: Path, metrics: dict, provenance: dict, limitation: str) -> None:
    """The export's manifest.json, with the held-out figures, the provenance and the limitations added."""
    manifest = json.loads((Path(out_dir) / "manifest.json").read_text())
    manifest["metrics"] = {
        "held_out_bits_per_byte": metrics.get("held_out_bits_per_byte", {}),
        "tokens_seen": provenance.get("tokens"),
        "train_seconds": provenance.get("train_seconds"),
    }
    manifest["provenance"] = metrics["provenance"]
    manifest["limitations"] = limitation
    (Path(out_dir) / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
