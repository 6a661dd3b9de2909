"""Live council decoding: several EqLMs decode together as the equilibrium of an influence game (ADR 0008).

At each position every member i gives l_i, its log-softmax. The consensus y and the influence weights w solve

    w_i(y) = softmax_i(beta * <y, l_i>),   log y <- (1 - eta) log y + eta (sum_i w_i(y) l_i + tau log p_ref),

renormalised, iterated from y = p_ref until the L1 movement of y is below `tol` or `max_iter` is reached. Every
iterate is a distribution, so stopping early is safe. The fixed point is y* ∝ exp(sum_i w_i(y*) l_i) p_ref^tau;
beta = 0 is logit averaging, a large beta approaches routing, tau pulls toward the reference (the mean of the
members' distributions, or one member's). Pure numpy; the members run on eqlm.generation (onnxruntime, never torch).

With `memory="fixed_share"` each member also carries a reputation pi_i, its fixed-share posterior (Herbster & Warmuth
1998) from its log-probabilities of the bytes already in the context, and w_i(y) = softmax_i(beta <y, l_i> + log pi_i)
(docs/decisions/0001-council-memory.md). `memory="none"` is the game above, computed exactly as before. With
`pool="arithmetic"` the consensus is the fixed point of y = sum_i w_i(y) p_i instead (at beta = 0 with memory, the
fixed-share mixture); the memory's functions and the arithmetic update are in eqlm.council_memory.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields

import numpy as np

from .council_memory import arithmetic_update, fixed_share_reputations, fixed_share_update
from .decoder import ContextLengthExceeded, DecodeCache, process
from .generation import (
    GenerationRequest,
    GenerationResult,
    Generator,
    StreamStats,
    TokenEvent,
    TokenStream,
    choose_token,
)
from .limits import DEFAULT_HALT
from .logprobs import log_softmax, logsumexp, softmax
from .manifest import is_explicit
from .tokenizers import get_tokenizer, tokenizer_name

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
# bench/council_defaults.py (10 KJV + 10 code prompts, bare and chat-framed) holds the council within 0.1 bits/byte
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


# --- decoding -----------------------------------------------------------------------------------------------------


@dataclass
class CouncilEntry:
    """What the game did for one generated token."""

    weights: list[float]  # in member order
    leader: int  # index of the member with the largest weight (lowest index on ties)
    iterations: int
    residual: float
    converged: bool
    members: list[dict]  # each member's EqLM telemetry at that position: {"iterations", "residual"}
    log_y: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))
    reputations: list[float] | None = None  # with memory: each member's pi over the context before this token

    def as_json(self, members: Sequence[str]) -> dict:
        reputations = None if self.reputations is None else [round(p, 6) for p in self.reputations]
        return {
            "weights": [round(w, 6) for w in self.weights],
            "reputations": reputations,
            "leader": members[self.leader],
            "iterations": self.iterations,
            "residual": self.residual if math.isfinite(self.residual) else None,
            "converged": self.converged,
            "members": [{"model": m, **telemetry} for m, telemetry in zip(members, self.members, strict=True)],
        }


@dataclass
class CouncilStats(StreamStats):
    """StreamStats plus one CouncilEntry per generated token (emitted events are a prefix of them)."""

    entries: list[CouncilEntry] = field(default_factory=list)
    prompt_weights: np.ndarray | None = None  # [T - 1, M] with echo_logprobs
    prompt_reputations: np.ndarray | None = None  # [T - 1, M] with echo_logprobs and memory


@dataclass
class CouncilResult(GenerationResult):
    """A finished council generation: one CouncilEntry per returned token (and the stream's stats)."""

    stats: CouncilStats | None = None

    @property
    def entries(self) -> list[CouncilEntry]:
        return self.stats.entries[: len(self.tokens)]


class _MemberState:
    """One member's incremental decode: its cache and the state of its last position."""

    def __init__(self, generator: Generator, request: GenerationRequest, ids: list[int], keep_prompt: bool):
        self.generator = generator
        self.model = generator.model
        self.request = request
        if request.tol is not None:
            self.depth = int(request.depth or generator.max_depth)
        else:
            self.depth = int(request.depth or generator.default_depth)
        self.cache = DecodeCache(self.model, self.depth)
        warm = request.warm_start
        z, iterations, residual = process(
            self.model, self.cache, ids, self.depth, request.tol, request.solver, settle=warm
        )
        self.prompt_z = z if keep_prompt else None
        self._keep(z[:, -1:], iterations[-1], residual[-1])

    def _keep(self, z, iterations, residual) -> None:
        self.z = z
        self.iterations = int(iterations)
        self.residual = float(residual)

    def log_probs(self) -> np.ndarray:
        return log_softmax(self.model.head(self.z)[0, -1])

    def prompt_log_probs(self) -> np.ndarray:
        """[T, V]: every prompt position's log-probabilities (the prompt was one batched solve)."""
        return log_softmax(self.model.head(self.prompt_z)[0])

    def telemetry(self) -> dict:
        finite = math.isfinite(self.residual)
        return {"iterations": self.iterations, "residual": self.residual if finite else None}

    def advance(self, token: int) -> None:
        z0 = self.z if self.request.warm_start else None
        req = self.request
        z, iterations, residual = process(
            self.model, self.cache, [token], self.depth, req.tol, req.solver, z0, settle=req.warm_start
        )
        self._keep(z, iterations[0], residual[0])


def council_refuses(start: str, halt: str) -> str:
    """Why the council cannot take this start or halting rule ("" when it can).

    Its members are decoded by _MemberState, one shared schedule of zero or warm starts halted on the residual:
    the noise start and the KL rule are not part of it.
    """
    if start == "noise":
        return (
            'the council does not take start "noise": its members share one solve schedule (a zero or warm start, '
            "halted on the residual), which has no noise start"
        )
    if halt != DEFAULT_HALT:
        return (
            f'the council does not take halt "{halt}": its members share one solve schedule (a zero or warm start, '
            "halted on the residual), which has no other halting rule"
        )
    return ""


def member_refuses(manifest: dict) -> str:
    """Why a model cannot be a council member ("" when it can): the members share one solve schedule of an
    equilibrium model's controls (depth, tol, start), which an explicit transformer does not take."""
    if is_explicit(manifest):
        return (
            "it is an explicit transformer, and the members share one solve schedule (the request's depth, tol and "
            "start), which an explicit transformer does not take: it has one depth, its layer count, and no tol or "
            "start"
        )
    return ""


class CouncilGenerator(Generator):
    """Generation from the equilibrium of several member generators (repeats allowed; each distinct one runs once).

    The game runs on the members' raw log-probabilities (temperature 1); the request's temperature/top_p apply
    only when the next token is drawn from y, stop strings are handled exactly as for one model, and the
    logprobs rows (TokenEvent.logprobs, StreamStats.prompt_logprobs) are log y.
    """

    def __init__(self, members: Sequence[Generator], kinetic: Kinetic, model_id: str = "eqlm-council"):
        kinetic.validate(len(members))
        for index, member in enumerate(members):
            why = member_refuses(member.manifest)
            if why:
                raise ValueError(f"kinetic.members[{index}] cannot be a council member: {why}")
        names = [tokenizer_name(member.manifest) for member in members]  # the game mixes distributions id by id
        if len(set(names)) != 1:
            used = ", ".join(f"members[{i}] uses {name}" for i, name in enumerate(names))
            raise ValueError(f"kinetic.members must share one tokenizer, and they do not ({used})")
        vocab = {m.model.vocab_size for m in members}
        if len(vocab) != 1:
            raise ValueError("kinetic.members must share one vocabulary")
        self.members = list(members)
        self.tokenizer = get_tokenizer(names[0])  # the members' own tokens, which the council generates in
        self.kinetic = kinetic
        self.model_id = model_id
        self.max_positions = min(m.max_positions for m in members)
        self.manifest = members[0].manifest
        self.model = members[0].model
        self.default_depth = members[0].default_depth
        self.max_depth = min(m.max_depth for m in members)  # every member must take the depth

    def stream(self, request: GenerationRequest) -> TokenStream:
        stats = CouncilStats()
        return TokenStream(self._stream(request, stats), stats)

    def generate(self, request: GenerationRequest) -> CouncilResult:
        return CouncilResult.from_stream(request, self.stream(request))

    def _entry(self, eq: Equilibrium, states: list[_MemberState], log_reputation: np.ndarray | None) -> CouncilEntry:
        return CouncilEntry(
            weights=[float(w) for w in eq.weights],
            leader=int(np.argmax(eq.weights)),
            iterations=int(eq.iterations),
            residual=float(eq.residual),
            converged=bool(eq.converged),
            members=[state.telemetry() for state in states],
            log_y=eq.log_y,
            reputations=None if log_reputation is None else [float(p) for p in np.exp(log_reputation)],
        )

    def _tokens(self, request: GenerationRequest, stats: StreamStats) -> Iterator[TokenEvent]:
        request.validate(self.max_depth, self.model.vocab_size)
        unsupported = council_refuses(request.start, request.halt if request.tol is not None else DEFAULT_HALT)
        if unsupported:
            raise ValueError(unsupported)
        given = request.ids(self.tokenizer)
        ids = given or self.tokenizer.encode(self.manifest.get("empty_prompt", "\n"))
        scoring = request.logprobs or request.echo_logprobs
        if scoring and len(ids) > self.max_positions:
            raise ContextLengthExceeded(len(ids), self.max_positions)
        if not scoring:
            ids = ids[-(self.max_positions - 1) :] if request.max_tokens > 0 else ids[-self.max_positions :]
        stats.prompt_ids = list(given)
        rng = np.random.default_rng(request.seed)
        memory = self.kinetic.memory != "none"
        distinct: dict[int, _MemberState] = {}
        states = []
        for member in self.members:
            if id(member) not in distinct:
                distinct[id(member)] = _MemberState(member, request, ids, request.echo_logprobs or memory)
            states.append(distinct[id(member)])
        log_pi = prompt_pi = None
        if memory or request.echo_logprobs:
            own = {key: state.prompt_log_probs() for key, state in distinct.items()}
        if memory:  # the reputations over the prompt: each member's log-probability of every byte after the first
            seen = np.stack([own[id(m)][np.arange(len(ids) - 1), ids[1:]] for m in self.members], axis=-1)
            rate = self.kinetic.learning_rate  # prompt_pi [T, M]: row t at prompt position t
            prompt_pi = fixed_share_reputations(seen, self.kinetic.share, learning_rate=rate)
            log_pi = prompt_pi[-1]
        if request.echo_logprobs:  # the game at every prompt position at once (a batch of positions)
            prompt_eq = solve(np.stack([own[id(m)] for m in self.members], axis=-2), self.kinetic, prompt_pi)
            if given:
                stats.prompt_logprobs = prompt_eq.log_y[:-1]
                if isinstance(stats, CouncilStats):
                    stats.prompt_weights = prompt_eq.weights[:-1]
                    if memory:
                        stats.prompt_reputations = np.exp(prompt_pi[:-1])
            else:
                stats.prompt_logprobs = np.zeros((0, self.model.vocab_size))
        length = len(ids)
        decoder = self.tokenizer.incremental_decoder()
        for n in range(request.max_tokens):
            own = {key: state.log_probs() for key, state in distinct.items()}
            stacked = np.stack([own[id(member)] for member in self.members])
            eq = solve(stacked, self.kinetic, log_pi)
            token = choose_token(eq.log_y, request.temperature, request.top_p, rng)
            entry = self._entry(eq, states, log_pi)
            stats.completion_tokens += 1
            stats.iterations.append(entry.iterations)
            stats.residuals.append(entry.residual)
            if isinstance(stats, CouncilStats):
                stats.entries.append(entry)
            row = eq.log_y if request.logprobs else None
            yield TokenEvent(token, decoder.push(token), entry.iterations, entry.residual, row)
            if n == request.max_tokens - 1:
                break
            if length >= self.max_positions:
                stats.finish_reason = "length"
                return
            if memory:
                log_pi = fixed_share_update(log_pi, stacked[:, token], self.kinetic.share, self.kinetic.learning_rate)
            for state in distinct.values():
                state.advance(token)
            length += 1
        stats.finish_reason = "length"


def window_log_probs(generator: Generator, windows: np.ndarray, depth: int) -> np.ndarray:
    """Each member's log-probabilities [B, T, V] over whole windows at a fixed depth (the bits/byte path)."""
    return log_softmax(generator.model.full_solve(windows, [depth])[depth])
