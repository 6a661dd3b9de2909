"""Checkpoint + text + spec -> measurements: the one evaluation path of the registry, the experiments and bench/.

- The text: `heldout_text` is the one held-out loader, for every evaluation (TEXTS: the held-out side of a corpus,
  the last corpus.HELDOUT_FRACTION of it, or the committed 4 KB KJV slice, `committed_slice`); `windows_of` cuts it.
- The measurements: `depth_profiles` (bits/byte, residuals and halting by depth and solver, eqlm.convergence, and
  the other starts against zero, eqlm.path_independence), `start_figures` and `halting_points` (the experiments'
  parts of the same), `explicit_figures` (an explicit transformer's one depth in the same shape).
- The rows: `record`, one long-format shape (the run's fields, metric, value, UNITS[metric], condition, n).
- Bits/byte: eqlm.units (LN2, mean_bits, mean_bits_of_sum).

The module itself imports no torch (the web process reads TEXTS and UNITS); the measuring functions import it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from .convergence import windows_of
from .model_files import KJV_SLICE

log = logging.getLogger(__name__)

TEXTS = ("heldout", "slice")  # the held-out side of the corpus the model was trained on, or the committed slice
COMMITTED = "committed held-out slice"
UNITS = {
    "heldout_bits_per_byte": "bits/byte",
    "residual_median": "relative residual",
    "residual_p95": "relative residual",
    "converged_fraction": "fraction",
    "mean_iterations": "iterations",
    "aa_cosine": "cosine",
    "greedy_agreement": "fraction",
    "blimp_accuracy": "accuracy",
    "flops_per_token": "FLOPs",
}

__all__ = ["COMMITTED", "TEXTS", "UNITS", "committed_slice", "corpus_text", "heldout_text", "record", "windows_of"]


def committed_slice() -> bytes:
    """The committed 4 KB KJV held-out slice (the default model's): what evaluations read when no corpus is dumped."""
    return KJV_SLICE.read_bytes()


def corpus_text(name: str = "kjv") -> tuple[bytes, str]:
    """(the whole corpus, what its held-out side is called) of a named corpus: the KJV (any name but "code") or the
    code corpus."""
    from .corpus import load_code_corpus, load_corpus

    if name == "code":
        return load_code_corpus()[0], "code corpus held-out slice"
    return load_corpus()[0], "corpus held-out slice"


def heldout_text(
    text: str, load: Callable[[], tuple[bytes, str]] = corpus_text, fallback: str | None = None
) -> tuple[bytes, str]:
    """(held-out bytes, where they came from). `text` "slice": the committed slice. "heldout": the held-out side of
    the corpus `load()` returns as (bytes, what its held-out side is called); when that corpus cannot be loaded
    (RuntimeError, OSError), the committed slice described as `fallback`, or the error where `fallback` is None."""
    if text not in TEXTS:
        raise ValueError(f"text must be one of {', '.join(TEXTS)}")
    if text == "slice":
        return committed_slice(), COMMITTED
    from .corpus import split

    try:
        data, name = load()
    except (RuntimeError, OSError) as exc:
        if fallback is None:
            raise
        log.warning("corpus unavailable (%s); evaluating on the committed slice", exc)
        return committed_slice(), fallback
    return split(data)[1], name


def record(base: dict, metric: str, value, condition: dict, **extra) -> dict:
    """One long-format result row (benchmarks' ingest_records): the run's `base` fields, then the metric, its value,
    its unit (UNITS) and the condition it was measured under; `extra` (e.g. n) overrides the base's fields."""
    return {**base, "metric": metric, "value": value, "unit": UNITS[metric], "condition": condition, **extra}


def explicit_figures(model, windows):
    """An explicit transformer's bits/byte at its one depth, its layer count, from the zero start (it has no other),
    as path_independence's PathIndependence."""
    from .explicit_bpb import explicit_bits_per_byte
    from .path_independence import PathIndependence, StartFigures

    value, positions = explicit_bits_per_byte(model, windows)
    depth = len(model.layers)
    return PathIndependence([depth], positions, {"zero": StartFigures("zero", {depth: value})})


def start_figures(model, windows, depths, starts, **options):
    """Bits/byte by depth from each start and the starts' agreement at the deepest (eqlm.path_independence), on the
    CPU as the depth-curve experiments measure (the noise comes from a CPU generator); `options` as it takes them."""
    from .path_independence import path_independence

    return path_independence(model.cpu(), windows, depths, starts, **options)


def halting_points(model, windows, tol: float, budgets: list[int]) -> list:
    """The residual halting rule at tol under each budget (cap), on the CPU: eqlm.convergence's AdaptivePoints."""
    from .convergence import TorchBackend, adaptive_point

    backend = TorchBackend(model.cpu(), "cpu")
    return [adaptive_point(backend, windows, tol, cap=budget) for budget in budgets]


def depth_profiles(model, windows, options: dict, device: str, start_depths: list[int], seed: int = 0, progress=None):
    """The registry's evaluation of an EqLM: fixed depths 1..max_depth per solver and adaptive halting at each
    tolerance (eqlm.convergence.evaluate, on `device`), then, when `options` name other starts, their figures at
    `start_depths` against zero (start_figures: noise seeded by `seed`, batch 8, warm at the deepest only).
    `progress(fraction, message)` hears of both. Returns (Evaluation, PathIndependence or None)."""
    from . import convergence as cv
    from .limits import DEFAULT_START

    evaluation = cv.evaluate(
        cv.TorchBackend(model, device),
        windows,
        solvers=options["solvers"],
        max_depth=options["max_depth"],
        tolerances=options["tolerances"],
        cap=options["cap"],
        batch=16 if device == "cuda" else 8,
        progress=None if progress is None else lambda f, m: progress(0.8 * f, m),
    )
    if not options.get("starts"):
        return evaluation, None
    if progress:
        progress(0.8, f"path independence: the {' and '.join(options['starts'])} starts against zero")
    starts = (DEFAULT_START, *options["starts"])
    paths = start_figures(model, windows, start_depths, starts, seed=seed, batch=8, warm_depths=[])
    return evaluation, paths
