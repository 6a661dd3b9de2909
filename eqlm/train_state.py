"""A training run's saved state: the hash a resume must match, its tensors on the CPU, a finished run, a handover.

out_dir/state.pt holds the model, the optimizer, the step and the run hash; a resume continues it only when the
hash (the resolved stage and the content it reads) and the threads and device it ran on are the same.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import torch

from .provenance import atomic_torch_save
from .recipe import Stage


def run_hash(stage: Stage, corpus_sha: str, init_sha: str | None, teacher_sha: str | None) -> str:
    """What a resumed run must share with the run it continues: the resolved stage and the content it reads."""
    blob = json.dumps(
        {"stage": stage.hashed(), "corpus": corpus_sha, "init": init_sha, "teacher": teacher_sha}, sort_keys=True
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def finished_checkpoint(state: dict, latest: Path, total: int) -> Path | None:
    """The stage's final checkpoint when its saved state already ran all `total` steps of its run, else None."""
    if state["step"] < total or not latest.exists():
        return None
    done = torch.load(latest, map_location="cpu", weights_only=True)["provenance"]
    return latest if done.get("run_hash") == state["run_hash"] and done.get("steps") == state["step"] else None


def hand_over(state_path: Path, threads: int, device: str) -> dict:
    """Let an unfinished run go on with other threads or on another device, and record it in the state.

    A resume keeps its threads and device, so that a stopped and resumed run equals an uninterrupted one bit for bit.
    A run handed over gives that up knowingly: the handover (from, to, at which step) is kept in the state and in every
    checkpoint's provenance from then on. Returns the handover recorded.
    """
    state = torch.load(state_path, map_location="cpu", weights_only=True)
    to = {"threads": threads, "device": device}
    if state.get("identity") == to:
        raise ValueError(f"{state_path} already trains on {to}: nothing to hand over")
    record = {"step": state["step"], "from": state.get("identity"), "to": to}
    state["handovers"] = [*state.get("handovers", []), record]
    state["identity"] = to
    atomic_torch_save(state, Path(state_path))
    return record


def _cpu(tree):
    """A state dict's tensors on the CPU, so a run saved on an accelerator loads anywhere."""
    if isinstance(tree, torch.Tensor):
        return tree.detach().cpu()
    if isinstance(tree, dict):
        return {k: _cpu(v) for k, v in tree.items()}
    if isinstance(tree, list | tuple):
        return type(tree)(_cpu(v) for v in tree)
    return tree
