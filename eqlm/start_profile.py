"""Held-out bits/byte by depth from a chosen start (zero or N(0, 1)), and how far apart the starts end (no Django).

The experiments' evaluation: every position iterates the map d times from z_0, for each start, over the same
windows; at each requested depth it records the mean next-byte negative log-likelihood (bits/byte) and, when both
starts run, the mean cosine between the two states (the asymptotic-alignment score of Anil et al. 2022: 1 when the
fixed point does not depend on where the solve starts). The noise start is drawn from a generator seeded by
(noise_seed, batch index), so the same windows get the same noise on every machine and run. Torch is imported
inside the functions: the web process reads STARTS from here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

LN2 = math.log(2)
STARTS = ("zero", "noise")


@dataclass
class StartProfile:
    """bits/byte by start and depth; state cosine (zero vs noise) by depth when both starts ran."""

    bits_per_byte: dict[str, dict[int, float]] = field(default_factory=dict)
    state_cosine: dict[int, float] = field(default_factory=dict)
    positions: int = 0


def initial_state(start: str, like, noise_seed: int, batch_index: int):
    import torch

    if start == "zero":
        return torch.zeros_like(like)
    if start == "noise":
        gen = torch.Generator().manual_seed(int(noise_seed) * 1_000_003 + int(batch_index))
        return torch.randn(like.shape, generator=gen, dtype=like.dtype).to(like.device)
    raise ValueError(f"unknown start {start!r}; expected one of {STARTS}")


def profile_starts(
    model,
    windows: np.ndarray,
    depths: Sequence[int],
    starts: Sequence[str] = STARTS,
    noise_seed: int = 0,
    batch: int = 8,
    device: str = "cpu",
    progress: Callable[[float], None] | None = None,
) -> StartProfile:
    """Picard from each start to max(depths) on the windows (each window's first byte is context only)."""
    import torch

    with torch.no_grad():
        return _profile(torch, model, windows, depths, starts, noise_seed, batch, device, progress)


def _profile(torch, model, windows, depths, starts, noise_seed, batch, device, progress) -> StartProfile:
    wanted = sorted({int(d) for d in depths})
    if not wanted or wanted[0] < 1:
        raise ValueError("depths must be positive")
    if windows.shape[1] - 1 > model.config.max_positions:
        raise ValueError(
            f"windows of {windows.shape[1]} bytes need {windows.shape[1] - 1} positions; "
            f"the model has {model.config.max_positions}"
        )
    model = model.eval().to(device)
    nll = {s: dict.fromkeys(wanted, 0.0) for s in starts}
    cosine = dict.fromkeys(wanted, 0.0)
    count = 0
    chunks = [windows[i : i + batch] for i in range(0, len(windows), batch)]
    for index, chunk in enumerate(chunks):
        ids = torch.as_tensor(chunk, device=device)
        inputs, targets = ids[:, :-1], ids[:, 1:]
        inj = model.embed(inputs)
        states = {s: initial_state(s, inj, noise_seed, index) for s in starts}
        for depth in range(1, wanted[-1] + 1):
            for s in starts:
                states[s] = model.block(states[s], inj)[0]
            if depth in nll[starts[0]]:
                for s in starts:
                    logits = model.head(states[s]).double()
                    loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
                    nll[s][depth] += float(loss)
                if len(starts) == 2:
                    cos = torch.nn.functional.cosine_similarity(states["zero"], states["noise"], dim=-1)
                    cosine[depth] += float(cos.double().sum())
        count += targets.numel()
        if progress:
            progress((index + 1) / len(chunks))
    profile = StartProfile(positions=count)
    for s in starts:
        profile.bits_per_byte[s] = {d: nll[s][d] / count / LN2 for d in wanted}
    if len(starts) == 2:
        profile.state_cosine = {d: cosine[d] / count for d in wanted}
    return profile


def explicit_profile(model, windows: np.ndarray, batch: int = 8, device: str = "cpu") -> StartProfile:
    """An explicit transformer's held-out bits/byte at its own depth, its layer count (it has no start to vary)."""
    import torch

    depth = len(model.layers)
    total, count = 0.0, 0
    model = model.eval().to(device)
    with torch.no_grad():
        for i in range(0, len(windows), batch):
            ids = torch.as_tensor(windows[i : i + batch], device=device)
            logits = model(ids[:, :-1]).double()
            total += float(
                torch.nn.functional.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten(), reduction="sum")
            )
            count += ids[:, 1:].numel()
    return StartProfile(bits_per_byte={"zero": {depth: total / count / LN2}}, positions=count)
