"""The programme's model files: one torch.save'd dict {state_dict, config_dict, model_class[, n_layers]}, read with
weights_only=True and memory-mapped, checked in full before a model is built, and written back in the same format.

Every refusal is a ProgrammeCheckpointError whose message names what is wrong. The file's declared size is checked
from its config alone, before any tensor is read or any module allocated.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from .config import ProgrammeConfig, ProgrammeConfigError, check_model_class, declared_bytes, expected_shapes

PROGRAMME_KEYS = ("state_dict", "config_dict", "model_class")
FINITE_CHUNK = 1 << 22  # elements checked for NaN/Inf at a time, so the check allocates a few MiB at most
TIED = ("embedding.weight", "lm_head.weight")


class ProgrammeCheckpointError(ValueError):
    """The file is not a loadable programme model (the message says why)."""


@dataclass
class ProgrammeCheckpoint:
    config: ProgrammeConfig
    model_class: str
    n_layers: int | None
    state_dict: dict
    sha256: str


def is_programme_format(blob) -> bool:
    """Whether a loaded dict is the programme's (not the portal's): no provenance, and a config_dict with exactly the
    programme's fields."""
    if not isinstance(blob, dict) or "provenance" in blob or not all(k in blob for k in PROGRAMME_KEYS):
        return False
    config = blob["config_dict"]
    return isinstance(config, dict) and set(config) == set(ProgrammeConfig.__dataclass_fields__)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _load(path: Path) -> dict:
    if not zipfile.is_zipfile(path):
        raise ProgrammeCheckpointError("truncated or corrupt file: not a torch zip archive")
    try:
        return torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except pickle.UnpicklingError as exc:
        detail = _unpickling_detail(str(exc))
        if "GLOBAL" in detail.upper():
            raise ProgrammeCheckpointError(
                f"refused: the file needs unpickling of code or objects, which weights_only loading forbids ({detail})"
            ) from None
        raise ProgrammeCheckpointError(f"truncated or corrupt file: its pickle does not parse ({detail})") from None
    except (RuntimeError, EOFError, OSError, ValueError, KeyError, AttributeError, TypeError, IndexError) as exc:
        raise ProgrammeCheckpointError(f"truncated or corrupt file: {str(exc).splitlines()[0][:200]}") from None


def _unpickling_detail(message: str) -> str:
    """The line of torch's weights_only error that says what failed, without its advice on turning the check off."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith(("Weights only load failed", "Please file", "Check the"))]
    return (useful[-1] if useful else lines[0] if lines else "no detail")[:200]


def _header(blob) -> tuple[ProgrammeConfig, str, int | None]:
    if not isinstance(blob, dict):
        raise ProgrammeCheckpointError(f"expected a dict with keys {list(PROGRAMME_KEYS)}, got {type(blob).__name__}")
    if "provenance" in blob:
        raise ProgrammeCheckpointError("a portal checkpoint (it has provenance), not a programme model file")
    missing = [k for k in PROGRAMME_KEYS if k not in blob]
    extra = sorted(str(k) for k in blob if k not in (*PROGRAMME_KEYS, "n_layers"))
    if missing or extra:
        raise ProgrammeCheckpointError(f"top-level keys: missing {missing}, unexpected {extra}")
    try:
        check_model_class(blob["model_class"], blob.get("n_layers"))
        config = ProgrammeConfig.from_dict(blob["config_dict"])
    except ProgrammeConfigError as exc:
        raise ProgrammeCheckpointError(str(exc)) from None
    return config, blob["model_class"], blob.get("n_layers")


def _check_tensors(state, shapes: dict) -> None:
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ProgrammeCheckpointError("state_dict must map parameter names to tensors")
    missing = [k for k in shapes if k not in state]
    extra = [str(k) for k in state if k not in shapes]
    if missing or extra:
        raise ProgrammeCheckpointError(f"state_dict keys: missing {missing[:8]}, unexpected {extra[:8]}")
    for key, shape in shapes.items():
        tensor = state[key]
        if tuple(tensor.shape) != shape:
            raise ProgrammeCheckpointError(f"{key} has shape {tuple(tensor.shape)}; the config needs {shape}")
        if not tensor.is_floating_point():
            raise ProgrammeCheckpointError(f"{key} holds {tensor.dtype}, not floating-point weights")
    for key in shapes:
        if key == TIED[1] and _same_storage(state[TIED[0]], state[TIED[1]]):
            continue
        flat = state[key].reshape(-1)
        for start in range(0, flat.numel(), FINITE_CHUNK):
            if not torch.isfinite(flat[start : start + FINITE_CHUNK]).all():
                raise ProgrammeCheckpointError(f"{key} holds NaN or Inf")
    embedding, head = state[TIED[0]], state[TIED[1]]
    if not (_same_storage(embedding, head) or torch.equal(embedding, head)):
        raise ProgrammeCheckpointError("lm_head.weight is tied to embedding.weight, but the file holds two different")


def _same_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    return (
        a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
        and a.storage_offset() == b.storage_offset()
        and a.stride() == b.stride()
        and a.dtype == b.dtype
    )


def read_programme_checkpoint(path: Path, max_bytes: int) -> ProgrammeCheckpoint:
    """The file's config, class and (memory-mapped) tensors, every check passed; ProgrammeCheckpointError if not."""
    path = Path(path)
    try:
        sha = file_sha256(path)
    except OSError as exc:
        raise ProgrammeCheckpointError(f"cannot read the file: {exc}") from None
    blob = _load(path)
    config, model_class, n_layers = _header(blob)
    size = declared_bytes(config, model_class, n_layers)
    if size > max_bytes:
        raise ProgrammeCheckpointError(
            f"declared size {size} bytes (fp32, from the config) is over max_bytes ({max_bytes})"
        )
    _check_tensors(blob["state_dict"], expected_shapes(config, model_class, n_layers))
    return ProgrammeCheckpoint(config, model_class, n_layers, blob["state_dict"], sha)


def build_from_checkpoint(checkpoint: ProgrammeCheckpoint):
    """The model of a checked file, in eval mode, fp32. Its modules are built on the meta device and take the file's
    tensors (memory-mapped where already fp32) instead of allocating and copying twice."""
    from .model import build_programme_model

    with torch.device("meta"):
        model = build_programme_model(checkpoint.config, checkpoint.model_class, checkpoint.n_layers)
    state = {k: v if v.dtype == torch.float32 else v.float() for k, v in checkpoint.state_dict.items()}
    model.load_state_dict(state, strict=True, assign=True)
    model.tie_head()
    for block in model.blocks():
        _check_spectral_scale(block)
    return model.eval()


@torch.no_grad()
def _check_spectral_scale(block) -> None:
    from .model import LINEARS

    for name in LINEARS:
        linear = getattr(block, name)
        if hasattr(linear, "parametrizations"):
            norm = linear.parametrizations.weight[0]
            sigma = torch.vdot(norm._u, torch.mv(linear.parametrizations.weight.original, norm._v))
            if not (torch.isfinite(sigma) and sigma != 0):
                raise ProgrammeCheckpointError(f"{name}'s spectral norm u . (W v) is {float(sigma)}, not usable")


def load_programme_model(path: Path, max_bytes: int):
    """(model in eval mode, ProgrammeCheckpoint) of a programme file, or ProgrammeCheckpointError."""
    checkpoint = read_programme_checkpoint(path, max_bytes)
    return build_from_checkpoint(checkpoint), checkpoint


def save_programme_checkpoint(model, path: Path) -> Path:
    """Write the programme's format atomically. The tied pair stays one storage (state_dict shares it; nothing is
    cloned), so the file holds the embedding once, as the programme's own files do."""
    if model.spectral_folded:
        raise ValueError("this model's spectral norm is folded into plain weights; the programme's format needs it")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload: dict = {
        "state_dict": {k: v.detach() for k, v in model.state_dict().items()},
        "config_dict": asdict(model.config),
        "model_class": model.model_class,
    }
    if model.model_class == "ExplicitLM":
        payload["n_layers"] = len(model.layers)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    os.close(fd)
    try:
        torch.save(payload, tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path
