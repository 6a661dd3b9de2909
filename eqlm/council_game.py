"""The council's game: the equilibrium of an influence game over members' log-probabilities (ADR 0008).

At each position every member i gives l_i, its log-softmax. The consensus y and the influence weights w solve

    w_i(y) = softmax_i(beta * <y, l_i>),   log y <- (1 - eta) log y + eta (sum_i w_i(y) l_i + tau log p_ref),

renormalised, iterated from y = p_ref until the L1 movement of y is below `tol` or `max_iter` is reached. Every
iterate is a distribution, so stopping early is safe. The fixed point is y* ∝ exp(sum_i w_i(y*) l_i) p_ref^tau;
beta = 0 is logit averaging, a large beta approaches routing, tau pulls toward the reference (the mean of the
members' distributions, or one member's). Pure numpy. The controls (Kinetic) and their served defaults
(MEMORY_DEFAULTS) are here too; eqlm.council decodes with them.

With a log reputation log pi_i (the memory, eqlm.council_memory) w_i(y) = softmax_i(beta <y, l_i> + log pi_i); with
`pool="arithmetic"` the consensus is the fixed point of y = sum_i w_i(y) p_i instead.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields

import numpy as np

from .council_memory import arithmetic_update
from .logprobs import log_softmax, logsumexp, softmax

DEFAULT_BETA = 2.0
DEFAULT_TAU = 0.0
DEFAULT_ETA = 0.5
DEFAULT_MAX_ITER = 32
MAX_MAX_ITER = 256
DEFAULT_TOL = 1e-5
MEMORIES = ("none", "fixed_share")
POOLS = ("geometric", "arithmetic")
DEFAULT_SHARE = 0.002
# The council with memory as /v1 and the chat page serve it by default (docs/decisions/0001-council-memory.md). The
# pool and beta are those bench/council.py chose on its tuning mix; the share and learning rate are slower than its
# scoring optimum (0.02, 0.5), so that greedy generation stays with the member whose domain the prompt is in:
# bench/council.py --defaults (10 KJV + 10 code prompts, bare and chat-framed) holds the council within 0.1 bits/byte
# of the matching member's own continuation with that member over half the weight by the fifth byte, at a cost of
# 0.04-0.09 bits/byte on bench/council.py's held-out mixes (the decision record's third decision). Kinetic's own
# defaults keep today's game for the controls that act without memory too (beta, pool), so that code building a
# Kinetic without naming them computes exactly as before; its share is the served one, and its learning rate 1 is
# Bayes' rule, the fixed share of the first decision.
MEMORY_DEFAULTS = {
    "memory": "fixed_share",
    "share": DEFAULT_SHARE,
    "beta": 0.0,
    "pool": "arithmetic",
    "learning_rate": 0.1,
}


@dataclass(frozen=True)
class Kinetic:
    """The game's controls. `reference` is "mean" or the index of a member in the member list.

    `memory` is "none" (the game on the current position alone) or "fixed_share" (each member's reputation over the
    context weighs its influence); `share` is the fixed-share switching rate and `learning_rate` the weight of each
    byte's evidence in the reputation's update (1: Bayes' rule), both used only with memory. `pool` is how
    the members' distributions combine: "geometric" (log-linear, the game of ADR 0008) or "arithmetic" (y is the
    w(y)-weighted mean of the members' distributions).
    """

    beta: float = DEFAULT_BETA
    tau: float = DEFAULT_TAU
    eta: float = DEFAULT_ETA
    max_iter: int = DEFAULT_MAX_ITER
    tol: float = DEFAULT_TOL
    reference: str | int = "mean"
    memory: str = "none"
    share: float = DEFAULT_SHARE
    pool: str = "geometric"
    learning_rate: float = 1.0

    @classmethod
    def from_dict(cls, controls: Mapping) -> Kinetic:
        """The controls from a mapping of field names; a name that is not a control raises ValueError naming it."""
        known = {f.name for f in fields(cls)}
        for name in controls:
            if name not in known:
                raise ValueError(f"kinetic.{name} is not a control (known: {', '.join(sorted(known))})")
        return cls(**controls)

    def validate(self, members: int) -> None:
        """Raises ValueError naming the field (kinetic.beta, ...) when a control is out of range."""
        checks = [
            ("members", members >= 2, "needs at least 2 members"),
            ("beta", math.isfinite(self.beta) and self.beta >= 0, "must be a finite number >= 0"),
            ("tau", math.isfinite(self.tau) and self.tau >= 0, "must be a finite number >= 0"),
            ("eta", 0 < self.eta <= 1, "must be in (0, 1]"),
            ("max_iter", 1 <= int(self.max_iter) <= MAX_MAX_ITER, f"must be between 1 and {MAX_MAX_ITER}"),
            ("tol", math.isfinite(self.tol) and self.tol > 0, "must be > 0"),
        ]
        ref = self.reference
        ref_ok = ref == "mean" or (isinstance(ref, int) and not isinstance(ref, bool) and 0 <= ref < members)
        checks.append(("reference", ref_ok, "must be 'mean' or a member"))
        checks.append(("memory", self.memory in MEMORIES, "must be 'none' or 'fixed_share'"))
        share = self.share
        share_ok = isinstance(share, int | float) and not isinstance(share, bool) and 0 <= share < 1
        checks.append(("share", share_ok, "must be a number in [0, 1)"))
        checks.append(("pool", self.pool in POOLS, "must be 'geometric' or 'arithmetic'"))
        rate = self.learning_rate
        rate_ok = isinstance(rate, int | float) and not isinstance(rate, bool) and math.isfinite(rate) and rate > 0
        checks.append(("learning_rate", rate_ok, "must be a finite number > 0"))
        for name, ok, message in checks:
            if not ok:
                raise ValueError(f"kinetic.{name} {message}")


@dataclass
class Equilibrium:
    """The solve at one position (arrays of shape [...] for a batch of positions)."""

    log_y: np.ndarray  # [..., V] log of the consensus distribution
    weights: np.ndarray  # [..., M] influence weights w(y), a distribution over members
    iterations: np.ndarray  # [...] updates made
    residual: np.ndarray  # [...] L1 movement of y at the last update
    converged: np.ndarray  # [...] residual < tol

    @property
    def y(self) -> np.ndarray:
        return np.exp(self.log_y)


def influence_weights(
    y: np.ndarray, log_probs: np.ndarray, beta: float, log_reputation: np.ndarray | None = None
) -> np.ndarray:
    """w_i(y) = softmax_i(beta <y, l_i> + log pi_i): y [..., V], log_probs [..., M, V], log pi [..., M] -> [..., M].

    Without a reputation the prior term is absent (not zero): the memoryless game computes exactly as it always has.
    """
    score = beta * np.einsum("...v,...mv->...m", y, log_probs)
    if log_reputation is not None:
        score = score + log_reputation
    return softmax(score)


def reference_log_probs(log_probs: np.ndarray, reference: str | int = "mean") -> np.ndarray:
    """log p_ref: the log of the mean of the members' distributions, or one member's log-probabilities."""
    if reference == "mean":
        return logsumexp(log_probs, axis=-2) - math.log(log_probs.shape[-2])
    return log_probs[..., int(reference), :]


def equilibrium(
    log_probs: np.ndarray,
    *,
    beta: float = DEFAULT_BETA,
    tau: float = DEFAULT_TAU,
    eta: float = DEFAULT_ETA,
    max_iter: int = DEFAULT_MAX_ITER,
    tol: float = DEFAULT_TOL,
    reference: str | int = "mean",
    log_reputation: np.ndarray | None = None,
    pool: str = "geometric",
) -> Equilibrium:
    """The consensus of members' log-probabilities [..., M, V] (any leading batch of positions).

    Each position stops updating once its own movement is below tol, so a batch gives exactly what solving the
    positions one at a time gives. `log_reputation` [..., M] is each position's log pi (the memory term), or None.
    `pool` "arithmetic" solves y = sum_i w_i(y) p_i instead, damped in the probability domain
    (eqlm.council_memory.arithmetic_update), with tau pulling y toward p_ref as a mixture, not a power.
    """
    if pool not in POOLS:
        raise ValueError(f"kinetic.pool must be one of {', '.join(POOLS)}")
    # float64, so that no member's logit offset buys it influence; idempotent on log-probabilities
    lp = log_softmax(log_probs)
    log_ref = reference_log_probs(lp, reference)
    arithmetic = pool == "arithmetic"
    if arithmetic:
        probs, ref = np.exp(lp), np.exp(log_ref) if tau else None
    else:
        pull = tau * log_ref if tau else 0.0
    log_y = log_softmax(log_ref)
    batch = lp.shape[:-2]
    iterations = np.zeros(batch, dtype=np.int64)
    residual = np.full(batch, np.inf)
    converged = np.zeros(batch, dtype=bool)
    for _ in range(int(max_iter)):
        active = ~converged
        if not active.any():
            break
        y = np.exp(log_y)
        w = influence_weights(y, lp, beta, log_reputation)
        if arithmetic:
            new = arithmetic_update(y, w, probs, eta, tau, ref)
        else:
            new = (1 - eta) * log_y + eta * (np.einsum("...m,...mv->...v", w, lp) + pull)
            new = log_softmax(new)
        movement = np.abs(np.exp(new) - y).sum(axis=-1)
        log_y = np.where(active[..., None], new, log_y)
        residual = np.where(active, movement, residual)
        iterations += active
        converged |= active & (movement < tol)
    weights = influence_weights(np.exp(log_y), lp, beta, log_reputation)
    return Equilibrium(log_y, weights, iterations, residual, converged)


def solve(log_probs: np.ndarray, kinetic: Kinetic, log_reputation: np.ndarray | None = None) -> Equilibrium:
    return equilibrium(
        log_probs,
        beta=kinetic.beta,
        tau=kinetic.tau,
        eta=kinetic.eta,
        max_iter=kinetic.max_iter,
        tol=kinetic.tol,
        reference=kinetic.reference,
        log_reputation=log_reputation,
        pool=kinetic.pool,
    )
