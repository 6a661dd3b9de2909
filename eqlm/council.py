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
fixed-share mixture); the memory's functions and the arithmetic update are in eqlm.council_memory, the game and
its controls in eqlm.council_game.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from .council_game import DEFAULT_BETA as DEFAULT_BETA  # the game's names, imported from here by the v1 API and bench
from .council_game import MEMORIES as MEMORIES
from .council_game import MEMORY_DEFAULTS as MEMORY_DEFAULTS
from .council_game import POOLS as POOLS
from .council_game import Equilibrium, Kinetic, solve
from .council_game import equilibrium as equilibrium
from .council_memory import fixed_share_reputations, fixed_share_update
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
from .logprobs import log_softmax
from .manifest import is_explicit
from .tokenizers import get_tokenizer, tokenizer_name


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
