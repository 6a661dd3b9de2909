"""Log probabilities on the wire: log-softmax, top-k and the OpenAI shapes, from one log-probability row per token.

Nothing here knows a model: each function takes the log-probability vector that predicted a token (a numpy row over
the model's vocabulary) and the model's tokenizer (eqlm.tokenizers; UTF-8 bytes when None), so any scorer (the
generator, the prompt solve, a council) can build the same wire shapes. Legacy completions get `{tokens,
token_logprobs, top_logprobs, text_offset}`; chat gets `content` entries of `{token, logprob, bytes, top_logprobs}`.
Token names are the tokenizer's `token_string`; `bytes` are each token's bytes; a text offset counts characters of the
choice's text (TextOffsets), except a byte model's, which counts bytes (one per token).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .tokenizer import token_string
from .tokenizers import Tokenizer

MAX_TOP_LOGPROBS = 20
TOKEN_NAMES = [token_string(t) for t in range(256)]


def logsumexp(x: np.ndarray, axis: int = -1, keepdims: bool = False) -> np.ndarray:
    """log(sum(exp(x))) over one axis, in float64, shifted by the maximum so that nothing overflows."""
    x = np.asarray(x, dtype=np.float64)
    m = x.max(axis=axis, keepdims=True)
    out = m + np.log(np.exp(x - m).sum(axis=axis, keepdims=True))
    return out if keepdims else out.squeeze(axis)


def log_softmax(logits: np.ndarray, axis: int = -1) -> np.ndarray:
    """Log-softmax over one axis (the last by default), in float64: the one every scorer and the council use."""
    lg = np.asarray(logits, dtype=np.float64)
    return lg - logsumexp(lg, axis, keepdims=True)


def softmax(logits: np.ndarray, axis: int = -1) -> np.ndarray:
    """Softmax over one axis (the last by default), shifted by the maximum: the one every sampler and game uses."""
    e = np.exp(logits - logits.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def nll_from_logits(logits: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Per-position negative log-likelihood in nats, float64: logits [..., V], targets [...]."""
    picked = np.take_along_axis(log_softmax(logits), np.asarray(targets)[..., None], -1)[..., 0]
    return -picked


def top_k(row: np.ndarray, k: int) -> list[tuple[int, float]]:
    """The k most likely tokens of one row, most likely first (lowest id first on ties, like greedy argmax)."""
    if k <= 0:
        return []
    order = np.argsort(-row, kind="stable")[:k]
    return [(int(i), float(row[i])) for i in order]


def top_k_rows(matrix: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(ids [N, k], values [N, k]) of each row's k most likely tokens, in top_k's order, by k argmax passes.

    Much faster than a full sort of every row for the k <= 20 the API allows; ties go to the lowest id.
    """
    work = np.array(matrix, dtype=np.float64, copy=True)
    rows = np.arange(work.shape[0])
    ids = np.empty((work.shape[0], max(k, 0)), dtype=np.int64)
    values = np.empty(ids.shape, dtype=np.float64)
    for j in range(ids.shape[1]):
        ids[:, j] = np.argmax(work, axis=1)
        values[:, j] = work[rows, ids[:, j]]
        work[rows, ids[:, j]] = -np.inf
    return ids, values


class TextOffsets:
    """Where each token starts in a choice's text (OpenAI's `text_offset`), token after token from `start`: in
    characters, as the tokenizer's streaming decoder completes them (a token inside a character starts where that
    character does). A byte model's offsets count bytes, one per token, as they always have."""

    def __init__(self, tokenizer: Tokenizer | None = None, start: int = 0):
        self.position = start
        bytewise = tokenizer is None or tokenizer.name == "bytes"
        self._decoder = None if bytewise else tokenizer.incremental_decoder()

    def take(self, token_ids: Sequence[int]) -> list[int]:
        """The offsets of the next tokens of the text."""
        offsets = []
        for token in token_ids:
            offsets.append(self.position)
            self.position += 1 if self._decoder is None else len(self._decoder.push(int(token)))
        return offsets


def name_of(tokenizer: Tokenizer | None):
    """The function naming a token id: the tokenizer's token_string (eqlm.tokenizer's byte names when None)."""
    return TOKEN_NAMES.__getitem__ if tokenizer is None else tokenizer.token_string


def completion_logprobs(
    token_ids: Sequence[int],
    rows: Sequence[np.ndarray | None],
    k: int,
    offset: int = 0,
    tokenizer: Tokenizer | None = None,
    offsets: TextOffsets | None = None,
) -> dict:
    """OpenAI's legacy `logprobs` object for tokens, each with the row that predicted it (None: no prediction).

    `text_offset` is each token's offset in the choice's text: from `offsets` when given (a choice's running
    TextOffsets), else from `offset` on, counted as TextOffsets counts for `tokenizer` (bytes when None).
    """
    name = name_of(tokenizer)
    tokens = [name(t) for t in token_ids]
    token_logprobs: list[float | None] = [None] * len(tokens)
    top: list[dict | None] = [None] * len(tokens)
    scored = [i for i, row in enumerate(rows) if row is not None]
    if scored:  # one vectorised pass over every scored row
        matrix = np.stack([rows[i] for i in scored])
        picked = matrix[np.arange(len(scored)), [token_ids[i] for i in scored]]
        order, best = top_k_rows(matrix, k)
        for n, i in enumerate(scored):
            token_logprobs[i] = float(picked[n])
            top[i] = {name(t): lp for t, lp in zip(order[n].tolist(), best[n].tolist(), strict=True)}
    text_offset = (offsets or TextOffsets(tokenizer, offset)).take(token_ids)
    return {"tokens": tokens, "token_logprobs": token_logprobs, "top_logprobs": top, "text_offset": text_offset}


def merge_completion_logprobs(parts: Sequence[dict]) -> dict:
    """Several legacy `logprobs` objects (the echoed prompt, then the completion) as one."""
    keys = ("tokens", "token_logprobs", "top_logprobs", "text_offset")
    return {key: [item for part in parts for item in part[key]] for key in keys}


def chat_logprob_entry(token: int, row: np.ndarray, k: int, tokenizer: Tokenizer | None = None) -> dict:
    """One entry of OpenAI's chat `logprobs.content`: the token's bytes in `bytes`, the top k alternatives."""
    name = name_of(tokenizer)
    raw = (lambda t: [int(t)]) if tokenizer is None else (lambda t: list(tokenizer.token_bytes(t)))
    return {
        "token": name(token),
        "logprob": float(row[token]),
        "bytes": raw(token),
        "top_logprobs": [{"token": name(t), "logprob": lp, "bytes": raw(t)} for t, lp in top_k(row, k)],
    }
