"""Test helpers: a tiny, randomly initialised EqLM exported to ONNX in a temporary folder (imports torch)."""

from __future__ import annotations

from pathlib import Path

from .limits import DEFAULT_MODEL_ID, DEPTH_MAX


def tiny_config(**overrides):
    from .model import EqLMConfig

    values = {"d_model": 32, "n_heads": 4, "d_mlp": 64, "max_positions": 64, "train_depths": [4, 8, 12]}
    values.update(overrides)
    return EqLMConfig(**values)


def tiny_model(seed: int = 0, **overrides):
    """A deterministic random EqLM small enough to export and run in well under a second."""
    import torch

    from .model import EqLM

    torch.manual_seed(seed)
    return EqLM(tiny_config(**overrides)).eval()


def export_tiny_model(out_dir: Path, seed: int = 0, max_depth: int = DEPTH_MAX, **overrides) -> Path:
    """Export tiny_model(seed) with its manifest (its depth cap `max_depth`) into out_dir; returns out_dir (a
    Generator can open it)."""
    from .export import export_onnx

    model = tiny_model(seed, **overrides)
    export_onnx(model, Path(out_dir), model_id=DEFAULT_MODEL_ID, extra={"tiny_test_model": True}, max_depth=max_depth)
    return Path(out_dir)
