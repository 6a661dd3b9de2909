"""Scoring token ids with a programme model as the programme does: one whole sequence at a time, no padding, no
cache, log-softmax in float64 (which reproduces its recorded Picard and ExplicitLM numbers bit for bit).

`cached_picard_logits` is the same Picard solve run position by position with per-iteration K/V caches, the way an
incremental decoder serves it.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.utils import parametrize

from .solvers import SOLVER_NAMES


def _logits(model, ids: torch.Tensor, solver: str, depth: int | None) -> torch.Tensor:
    if model.model_class == "ExplicitLM":
        if depth is not None and depth != model.n_layers:
            raise ValueError(f"an ExplicitLM's depth is its layer count ({model.n_layers}), not {depth}")
        return model(ids)
    if solver not in SOLVER_NAMES:
        raise ValueError(f"unknown solver {solver!r}; expected one of {SOLVER_NAMES}")
    if depth is None:  # the file's own settings: capped at deq_max_iter, stopping under deq_tol
        return model(ids, solver=solver)
    if depth < 1:
        raise ValueError(f"depth must be at least 1, not {depth}")
    return model(ids, solver=solver, max_iter=depth, tol=0.0)  # exactly `depth` iterations


def next_token_logprobs(model, ids, solver: str = "anderson-joint", depth: int | None = None) -> np.ndarray:
    """Entry i is log p(ids[i+1] | ids[..i]) (float64, len(ids) - 1 entries) from one whole-sequence forward.

    `solver` is picard | anderson-joint | broyden (an ExplicitLM has none); `depth` None runs the file's own settings
    (deq_max_iter, deq_tol), an integer exactly that many iterations from zero."""
    ids = torch.as_tensor(ids, dtype=torch.long).reshape(1, -1)
    if ids.shape[1] < 2:
        return np.zeros(0)
    if ids.shape[1] > model.config.max_seq_len:
        raise ValueError(f"{ids.shape[1]} tokens; this model takes at most {model.config.max_seq_len}")
    device = next(model.parameters()).device
    ids = ids.to(device)
    with torch.no_grad():
        logits = _logits(model, ids, solver, depth)
        logp = F.log_softmax(logits[0, :-1].double(), dim=-1)
        return logp.gather(-1, ids[0, 1:, None])[:, 0].cpu().numpy()


def sentence_logprob(model, ids, solver: str = "anderson-joint", depth: int | None = None) -> float:
    """Sum of log p(token i | tokens before it) for i >= 1, in nats (no BOS: the first token is not scored)."""
    return float(next_token_logprobs(model, ids, solver, depth).sum())


@torch.no_grad()
def cached_picard_logits(model, ids, depth: int) -> torch.Tensor:
    """Logits [T, V] of exactly `depth` Picard iterations from zero, computed one position at a time: position t's
    iteration i attends to the keys/values that positions < t produced at iteration i (cached) and to its own."""
    device = next(model.parameters()).device
    ids = torch.as_tensor(ids, dtype=torch.long).reshape(1, -1).to(device)
    cache: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * depth
    rows = []
    with parametrize.cached():
        for t in range(ids.shape[1]):
            rows.append(_cached_position(model, ids, t, cache, device))
    return torch.stack(rows)


def _cached_position(model, ids: torch.Tensor, t: int, cache: list, device) -> torch.Tensor:
    """Position t's logits [V] after len(cache) iterations; appends its keys/values to each iteration's cache."""
    inj = model.embed(ids[:, t : t + 1], torch.tensor([[t]], device=device))
    z = torch.zeros_like(inj)
    for i, past in enumerate(cache):
        z_next, k, v = model.block(z, inj, *(past or (None, None)))
        cache[i] = (k, v) if past is None else (torch.cat([past[0], k], 2), torch.cat([past[1], v], 2))
        z = z_next
    return model.head(z)[0, 0]
