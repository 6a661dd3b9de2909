"""Checkpoint files: one dict {model_class, config_dict, state_dict, provenance}, loaded with weights_only=True."""

from __future__ import annotations

import os
import pickle
import tempfile
from pathlib import Path

import torch

from .model import MODEL_CLASSES, EqLMConfig, build_model

REQUIRED_KEYS = ("model_class", "config_dict", "state_dict", "provenance")
PROVENANCE_KEYS = ("config_hash", "git_commit", "seed", "corpus", "corpus_sha256", "steps", "tokens", "created")


class CheckpointError(ValueError):
    """The file is not a loadable EqLM checkpoint (the message says why)."""


def shared_cpu_state(state: dict) -> dict:
    """The state dict on the CPU with tied tensors still sharing one storage (torch.save then writes them once:
    cloning each would store a tied embedding and head twice)."""
    moved: dict[tuple, torch.Tensor] = {}
    out = {}
    for key, value in state.items():
        tensor = value.detach()
        ident = (tensor.device, tensor.data_ptr(), tuple(tensor.shape), tuple(tensor.stride()), tensor.dtype)
        if ident not in moved:
            moved[ident] = tensor.cpu()
        out[key] = moved[ident]
    return out


def save_checkpoint(model, path: Path, provenance: dict) -> Path:
    """Write atomically (temp file + rename) so a reader never sees half a checkpoint."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "model_class": model.model_class,
        "config_dict": model.config.to_dict(),
        "state_dict": shared_cpu_state(model.state_dict()),
        "provenance": dict(provenance),
    }
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    os.close(fd)
    try:
        torch.save(payload, tmp)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a checkpoint is meant to be shared
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def sniff_format(path) -> str:
    """ "programme" for a file in the programme's format (a `config_dict` and no `provenance`), else "portal"; a file
    that cannot be read at all is "portal", whose reader says why."""
    try:
        data = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception:  # noqa: BLE001 - the format's own reader reports the problem
        return "portal"
    # The portal's files always carry provenance: a dict without it, with a config_dict, is the programme's (its
    # reader names any field that is not one of the programme's own)
    programme = isinstance(data, dict) and "provenance" not in data and isinstance(data.get("config_dict"), dict)
    return "programme" if programme else "portal"


def read_checkpoint(path_or_file) -> dict:
    """Load and validate the dict; never unpickles code (weights_only=True), so a malicious file cannot run."""
    try:
        data = torch.load(path_or_file, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        raise CheckpointError(
            "refused: the file needs unpickling of code or objects, which weights_only loading does not allow "
            f"({str(exc).splitlines()[0][:200]})"
        ) from None
    except (RuntimeError, EOFError, OSError, ValueError, KeyError, AttributeError, TypeError) as exc:
        detail = str(exc).splitlines()[0][:200]
        if "zip archive" in detail or isinstance(exc, EOFError):
            raise CheckpointError(f"truncated or corrupt file: not a complete torch archive ({detail})") from None
        raise CheckpointError(f"not a readable torch checkpoint: {detail}") from None
    if not isinstance(data, dict):
        raise CheckpointError(f"expected a dict with keys {list(REQUIRED_KEYS)}, got {type(data).__name__}")
    missing = [k for k in REQUIRED_KEYS if k not in data]
    if missing:
        raise CheckpointError(f"checkpoint dict lacks keys: {missing}")
    if data["model_class"] not in MODEL_CLASSES:
        raise CheckpointError(f"unknown model_class {data['model_class']!r}; expected one of {sorted(MODEL_CLASSES)}")
    if not isinstance(data["config_dict"], dict):
        raise CheckpointError("config_dict must be a dict")
    try:
        EqLMConfig.from_dict(data["config_dict"])
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"bad config_dict: {exc}") from None
    state = data["state_dict"]
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise CheckpointError("state_dict must map parameter names to tensors")
    if not isinstance(data["provenance"], dict):
        raise CheckpointError("provenance must be a dict")
    return data


def load_checkpoint(path_or_file):
    """(model in eval mode, checkpoint dict)."""
    data = read_checkpoint(path_or_file)
    model = build_model(data["model_class"], data["config_dict"])
    try:
        model.load_state_dict(data["state_dict"], strict=True)
    except RuntimeError as exc:
        raise CheckpointError(f"state_dict does not fit the config: {str(exc).splitlines()[0][:300]}") from None
    model.eval()
    return model, data
