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

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from .convergence import positions_mean
from .fixed_point import iterates
from .model import predecessor_states
from .units import LN2

STARTS = ("zero", "noise", "warm")
BATCH = 16  # windows solved together; the noise start draws one batch's normals at a time


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
    batch: int = BATCH,
    warm_depths: list[int] | None = None,
    gen: torch.Generator | None = None,
    progress: Callable[[int], None] | None = None,
) -> PathIndependence:
    """Bits/byte by depth from each start, and how far each start's deepest state is from the zero start's.

    A warm start at depth d is a solve of its own (d iterations from the zero start's states at d), so its cost is
    the sum of the depths: `warm_depths` (those of `depths` to measure it at; the deepest always) can cut it.

    The noise start draws one batch's normals at a time from `gen` (a generator seeded by `seed` when None). A caller
    that measures the windows in parts of whole batches, passing the same generator on, draws what one pass draws,
    and `merge` gives one pass's figures. `progress(n)` is told after each batch how many windows are done.
    """
    depths = sorted(set(depths))
    deepest = depths[-1]
    warm_depths = sorted({d for d in warm_depths if d in depths} | {deepest}) if warm_depths is not None else depths
    nll = {s: {d: [] for d in (warm_depths if s == "warm" else depths)} for s in starts}
    final: dict[str, list[torch.Tensor]] = {s: [] for s in starts}
    argmax: dict[str, list[torch.Tensor]] = {s: [] for s in starts}
    gen = torch.Generator().manual_seed(seed) if gen is None else gen
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
        if progress is not None:
            progress(i + len(ids))
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


def merge(parts: list[PathIndependence]) -> PathIndependence:
    """One pass's figures from the figures of its parts (the same depths and starts): every figure is a mean over
    positions, so the parts' means are weighted by their positions."""
    if len(parts) == 1:
        return parts[0]
    positions = [p.positions for p in parts]
    merged = PathIndependence(parts[0].depths, sum(positions))

    def mean(values: list[float | None]) -> float | None:
        return positions_mean(values, positions)

    for start, first in parts[0].starts.items():
        found = [p.starts[start] for p in parts]
        merged.starts[start] = StartFigures(
            start,
            {d: mean([f.bits_per_byte[d] for f in found]) for d in first.bits_per_byte},
            aa_cosine=mean([f.aa_cosine for f in found]),
            greedy_agreement=mean([f.greedy_agreement for f in found]),
            mean_iterations=mean([f.mean_iterations for f in found]),
        )
    return merged


def to_dict(figures: PathIndependence) -> dict:
    """A JSON-able form (depth keys as strings), which `from_dict` reads back."""
    return {
        "depths": figures.depths,
        "positions": figures.positions,
        "starts": {
            s: asdict(f) | {"bits_per_byte": {str(d): v for d, v in f.bits_per_byte.items()}}
            for s, f in figures.starts.items()
        },
    }


def from_dict(data: dict) -> PathIndependence:
    starts = {
        s: StartFigures(**(f | {"bits_per_byte": {int(d): v for d, v in f["bits_per_byte"].items()}}))
        for s, f in data["starts"].items()
    }
    return PathIndependence(list(data["depths"]), int(data["positions"]), starts)


def _states_by_depth(model, x: torch.Tensor, depths: list[int]) -> dict[int, torch.Tensor]:
    """The zero-start Picard states at each depth (what a warm start at that depth continues from)."""
    inj = model.embed(x)
    states = iterates(lambda z: model.block(z, inj)[0], torch.zeros_like(inj), depths[-1])
    return {i: z for i, z in states if i in depths}


def _nll(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.double().flatten(0, 1), y.flatten(), reduction="none")
