"""Does the solve reach the same point from any start? Bits/byte by depth and start, and the asymptotic alignment.

On non-overlapping held-out windows (each window's first byte is context only), the whole window is solved jointly
by Picard from three starts:

- ``zero``: z = 0, as the runtime's default;
- ``noise``: z ~ N(0, 1), from a torch generator seeded by `seed`;
- ``warm``: each position starts at its predecessor's state of the zero-start solve at the same depth (the first
  position at zero): the runtime's warm start, where a new position begins at the previous token's state.

For each start it reports bits/byte at each depth; between the zero start and each other start at the deepest depth
it reports the asymptotic-alignment (AA) score of Anil et al. 2022 (the mean cosine between the final states), the
share of positions whose most likely next byte agrees (teacher-forced greedy agreement) and the bits/byte gap.
No Django imports here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from .model import predecessor_states

LN2 = math.log(2)
STARTS = ("zero", "noise", "warm")


@dataclass
class StartFigures:
    start: str
    bits_per_byte: dict[int, float]  # depth -> bits/byte
    aa_cosine: float | None = None  # against the zero start, at the deepest depth
    greedy_agreement: float | None = None
    mean_iterations: float | None = None


@dataclass
class PathIndependence:
    depths: list[int]
    positions: int
    starts: dict[str, StartFigures] = field(default_factory=dict)


def _start_state(start: str, inj: torch.Tensor, gen: torch.Generator, zero_states: dict | None, depth: int):
    if start == "zero":
        return torch.zeros_like(inj)
    if start == "noise":
        return torch.randn(inj.shape, generator=gen)
    return predecessor_states(zero_states[depth])


@torch.no_grad()
def path_independence(
    model,
    windows: np.ndarray,
    depths: list[int],
    starts=STARTS,
    seed: int = 0,
    batch: int = 16,
    warm_depths: list[int] | None = None,
) -> PathIndependence:
    """Bits/byte by depth from each start, and how far each start's deepest state is from the zero start's.

    A warm start at depth d is a solve of its own (d iterations from the zero start's states at d), so its cost is
    the sum of the depths: `warm_depths` (those of `depths` to measure it at; the deepest always) can cut it.
    """
    depths = sorted(set(depths))
    deepest = depths[-1]
    warm_depths = sorted({d for d in warm_depths if d in depths} | {deepest}) if warm_depths is not None else depths
    nll = {s: {d: [] for d in (warm_depths if s == "warm" else depths)} for s in starts}
    final: dict[str, list[torch.Tensor]] = {s: [] for s in starts}
    argmax: dict[str, list[torch.Tensor]] = {s: [] for s in starts}
    gen = torch.Generator().manual_seed(seed)
    ids_all = torch.from_numpy(np.asarray(windows, dtype=np.int64))
    for i in range(0, len(ids_all), batch):
        ids = ids_all[i : i + batch]
        x, y = ids[:, :-1], ids[:, 1:]
        inj = model.embed(x)
        zero_states: dict[int, torch.Tensor] = {}
        for start in starts:
            if start == "warm":  # a warm start at depth d continues from the zero-start states at d
                for d in warm_depths:
                    out = model.solve(x, max_iter=d, z0=_start_state(start, inj, gen, zero_states, d))
                    nll[start][d].append(_nll(out.logits[d], y))
                final[start].append(out.z)
                argmax[start].append(out.logits[deepest].argmax(-1))
                continue
            out = model.solve(x, max_iter=deepest, depths=depths, z0=_start_state(start, inj, gen, None, deepest))
            for d in depths:
                nll[start][d].append(_nll(out.logits[d], y))
            if start == "zero" and "warm" in starts:
                zero_states = _states_by_depth(model, x, warm_depths)
            final[start].append(out.z)
            argmax[start].append(out.logits[deepest].argmax(-1))
    result = PathIndependence(depths, int(ids_all[:, 1:].numel()))
    reference_z = torch.cat(final["zero"]) if "zero" in starts else None
    reference_top = torch.cat(argmax["zero"]) if "zero" in starts else None
    for start in starts:
        figures = StartFigures(start, {d: float(torch.cat(v).mean() / LN2) for d, v in nll[start].items()})
        if reference_z is not None and start != "zero":
            z = torch.cat(final[start])
            figures.aa_cosine = float(F.cosine_similarity(z, reference_z, dim=-1).mean())
            figures.greedy_agreement = float((torch.cat(argmax[start]) == reference_top).float().mean())
        result.starts[start] = figures
    return result


def _states_by_depth(model, x: torch.Tensor, depths: list[int]) -> dict[int, torch.Tensor]:
    """The zero-start Picard states at each depth (what a warm start at that depth continues from)."""
    inj = model.embed(x)
    z = torch.zeros_like(inj)
    out = {}
    for i in range(1, depths[-1] + 1):
        z, _, _ = model.block(z, inj)
        if i in depths:
            out[i] = z
    return out


def _nll(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.double().flatten(0, 1), y.flatten(), reduction="none")
