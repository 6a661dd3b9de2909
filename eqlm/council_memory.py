"""The council's memory and its arithmetic pool: fixed-share reputations over the context, and the damped
probability-domain update of the pool y = sum_i w_i(y) p_i (docs/decisions/0001-council-memory.md). Pure numpy."""

from __future__ import annotations

import math

import numpy as np

from .logprobs import logsumexp


def fixed_share_update(
    log_reputation: np.ndarray, byte_log_probs: np.ndarray, share: float, learning_rate: float = 1.0
) -> np.ndarray:
    """One byte of fixed share (Herbster & Warmuth 1998, log loss): log pi [..., M] -> log pi'.

    Bayes' rule on the members' log-probabilities of the byte seen [..., M], each scaled by the learning rate
    (v_i ∝ pi_i p_i(x)^rate; 1 is Bayes, below 1 a tempered posterior that trusts each byte less), then each member
    passes the fraction `share` of its posterior equally to the others: pi'_i = (1 - share) v_i + share / (M - 1)
    (1 - v_i).
    """
    post = log_reputation + (byte_log_probs if learning_rate == 1 else learning_rate * byte_log_probs)
    post = post - logsumexp(post, axis=-1)[..., None]
    if not share:
        return post
    v = np.exp(post)
    return np.log((1 - share) * v + share / (post.shape[-1] - 1) * (1 - v))


def fixed_share_reputations(
    byte_log_probs: np.ndarray, share: float, start: np.ndarray | None = None, learning_rate: float = 1.0
) -> np.ndarray:
    """Log reputations along a text: byte_log_probs [..., T, M] (each member's log-probability of byte t) ->
    [..., T + 1, M], row t the reputation before byte t is seen (row 0 `start`, uniform by default), row T after all.
    """
    lp = np.asarray(byte_log_probs, dtype=np.float64)
    members = lp.shape[-1]
    if start is None:
        start = np.full(lp.shape[:-2] + (members,), -math.log(members))
    out = np.empty(lp.shape[:-2] + (lp.shape[-2] + 1, members))
    out[..., 0, :] = start
    for t in range(lp.shape[-2]):
        out[..., t + 1, :] = fixed_share_update(out[..., t, :], lp[..., t, :], share, learning_rate)
    return out


def fixed_share_mixture(log_probs: np.ndarray, log_reputation: np.ndarray) -> np.ndarray:
    """The classic Bayesian mixture: log sum_i pi_i p_i from log_probs [..., M, V] and log pi [..., M] -> [..., V]."""
    return logsumexp(log_probs + log_reputation[..., None], axis=-2)


def arithmetic_update(
    y: np.ndarray, weights: np.ndarray, probs: np.ndarray, eta: float, tau: float = 0.0, ref: np.ndarray | None = None
) -> np.ndarray:
    """One damped step of the arithmetic pool, in the probability domain: log of

        (1 - eta) y + eta (sum_i w_i p_i + tau p_ref) / (1 + tau),

    y [..., V], weights [..., M], probs [..., M, V], ref [..., V] (used only when tau > 0). A convex combination of
    distributions is one; the sum is renormalised only against rounding.
    """
    target = np.einsum("...m,...mv->...v", weights, probs)
    if tau:
        target = (target + tau * ref) / (1 + tau)
    new = (1 - eta) * y + eta * target
    return np.log(new / new.sum(axis=-1, keepdims=True))
