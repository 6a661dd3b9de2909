"""Scoring on the onnxruntime decoder (never torch): bits/byte, a prompt's log probabilities, rolling windows.

A prompt is scored in one batched solve, exactly as the generator solves a prompt; `rolling_bits_per_byte` is
what lm-evaluation-harness measures through /v1/completions with echo.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .decoder import ContextLengthExceeded, DecodeCache, OnnxEqLM, process
from .limits import DEFAULT_SOLVER
from .logprobs import log_softmax, nll_from_logits
from .units import mean_bits_of_sum


def bits_per_byte(model: OnnxEqLM, text: bytes, depths: list[int], window: int | None = None) -> dict[int, float]:
    """Held-out bits/byte at each depth: non-overlapping windows, each window's first byte is context only."""
    window = window or model.max_positions
    arr = np.frombuffer(text, dtype=np.uint8).astype(np.int64)
    n = (len(arr) // window) * window
    windows = arr[:n].reshape(-1, window)
    totals = dict.fromkeys(depths, 0.0)
    count = 0
    for start in range(0, len(windows), 16):
        chunk = windows[start : start + 16]
        logits = model.full_solve(chunk[:, :-1], depths)
        targets = chunk[:, 1:]
        for d in depths:
            totals[d] += float(nll_from_logits(logits[d], targets).sum())
        count += targets.size
    return {d: mean_bits_of_sum(totals[d], count) for d in depths}


@dataclass
class PromptScore:
    """The log probabilities of a prompt's tokens from one batched solve over the whole prompt."""

    ids: list[int]
    logprobs: np.ndarray  # [T, V]: row i is the distribution after tokens 0..i (row T-1 predicts the next token)
    iterations: np.ndarray  # [T] iterations each position used
    residual: np.ndarray  # [T] each position's last relative residual

    def token_logprobs(self) -> list[float]:
        """log P(token i | tokens before it) for i = 1..T-1 (the first token has no prediction)."""
        return [float(self.logprobs[i - 1, t]) for i, t in enumerate(self.ids) if i > 0]


def score_prompt(
    model: OnnxEqLM, ids: list[int], depth: int, tol: float | None = None, solver: str = DEFAULT_SOLVER
) -> PromptScore:
    """Score a whole prompt in one solve at the given depth/tol/solver, exactly as the generator solves a prompt."""
    if not ids:
        raise ValueError("nothing to score: the prompt is empty")
    if len(ids) > model.max_positions:
        raise ContextLengthExceeded(len(ids), model.max_positions)
    cache = DecodeCache(model, depth)
    z, iterations, residual = process(model, cache, list(ids), depth, tol, solver)
    return PromptScore(list(ids), log_softmax(model.head(z)[0]), iterations, residual)


def rolling_windows(n: int, max_seq_len: int) -> list[tuple[int, int, int]]:
    """lm-evaluation-harness's disjoint rolling windows over n tokens after one prefix token: (start, first, end).

    Indices are into the prefixed sequence (prefix at 0, token j at j + 1). Each window feeds tokens [start, end)
    and scores tokens [first, end): every token once, with at most max_seq_len scored per window and at least one
    token of context before them (get_rolling_token_windows + make_disjoint_window with context_len=1).
    """
    windows, scored = [], 0
    while scored < n:
        end = min(n, scored + max_seq_len)
        windows.append((max(0, end - max_seq_len), scored + 1, end + 1))
        scored = end
    return windows


def rolling_bits_per_byte(
    model: OnnxEqLM,
    text: bytes,
    depth: int,
    max_length: int = 256,
    bos: bytes = b"\n",
    tol: float | None = None,
    solver: str = DEFAULT_SOLVER,
) -> float:
    """lm-eval-compatible bits/byte: every byte of text scored after the beginning-of-text byte, in rolling windows.

    The windows of lm-evaluation-harness's API models' `loglikelihood_rolling` run with `max_length` (they score
    max_length - 2 tokens per request of max_length - 1: one token is kept for generation, one for context), the
    byte `bos` as prefix token; each window is one batched solve, so this equals what the harness measures
    through /v1/completions with echo.
    """
    if len(bos) != 1:
        raise ValueError("bos must be one byte")
    seq = list(bos) + list(text)
    total = 0.0
    for start, first, end in rolling_windows(len(text), max_length - 2):
        score = score_prompt(model, seq[start:end], depth, tol, solver)
        rows = score.logprobs[first - start - 1 : end - start - 1]
        total += float(rows[np.arange(len(rows)), seq[first:end]].sum())
    return mean_bits_of_sum(-total, len(text))
