"""Test helpers: a tiny, randomly initialised EqLM (or explicit transformer) exported to ONNX in a temporary folder
(imports torch)."""

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


def tiny_explicit_model(seed: int = 0, n_layers: int = 3, **overrides):
    """A deterministic random explicit transformer (ExplicitLM) of `n_layers` tiny layers; its depth is n_layers."""
    import torch

    from .model import ExplicitLM

    torch.manual_seed(seed)
    config = tiny_config(n_layers=n_layers, default_depth=n_layers, train_depths=[n_layers], **overrides)
    return ExplicitLM(config).eval()


def export_tiny_explicit_model(out_dir: Path, seed: int = 0, n_layers: int = 3, model_id: str = "explicit-demo"):
    """Export tiny_explicit_model(seed, n_layers) into out_dir (one graph per layer); returns out_dir."""
    from .export import export_onnx

    export_onnx(tiny_explicit_model(seed, n_layers), Path(out_dir), model_id=model_id, extra={"tiny_test_model": True})
    return Path(out_dir)
