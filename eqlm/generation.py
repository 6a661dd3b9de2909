"""Text generation on the onnxruntime decoder + numpy (never torch): what the web process and the /v1/ API use.

Greedy, temperature and top-p sampling with a seeded numpy Generator, stop strings, per-token log-probability
rows and the echoed prompt's, over `decoder.process` (fixed depth, halting by tolerance on the residual or on the
KL of successive next-byte distributions, a zero, warm or noise start, Picard or Anderson), within the model's own
depth cap (its manifest's `max_depth`). An explicit transformer's export decodes through the same loop at its one
depth, its layer count (decoder.OnnxEqLM.check refuses every other control).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .decoder import ContextLengthExceeded, DecodeCache, OnnxEqLM, process
from .limits import (
    DEFAULT_HALT,
    DEFAULT_MODEL_ID,
    DEFAULT_SOLVER,
    DEFAULT_START,
    DEPTH_MAX,
    DEPTH_MIN,
    HALTS,
    SOLVERS,
    STARTS,
    model_depths,
)
from .logprobs import log_softmax, softmax
from .noise import start_states
from .tokenizer import encode
from .tokenizers import Tokenizer, get_tokenizer, tokenizer_name


@dataclass
class GenerationRequest:
    """What to generate and how to solve it. `start` and `warm_start` are one setting, read together:

    - `start` (limits.STARTS): "zero" (the default), "warm" (a new position starts from the previous position's
      final state; the context is settled) or "noise" (every position starts from N(0, 1): eqlm/noise.py's normals
      for its position, seeded by `seed`, 0 when it is None);
    - `warm_start` is the older spelling: True means start "warm". Either alone sets both; given together they must
      agree (warm_start=True with another start, or warm_start=False with start "warm", is refused by validate).
    """

    prompt: str
    max_tokens: int = 64
    # DEPTH_MIN..the model's max_depth; None -> the model's default_depth unless tol is given (then its max_depth)
    depth: int | None = None
    tol: float | None = None
    warm_start: bool | None = None
    solver: str = DEFAULT_SOLVER  # one of limits.SOLVERS
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None  # the sampler's seed, and the noise start's (0 when None)
    stop: tuple[str, ...] = ()
    prompt_ids: tuple[int, ...] | None = None  # the model's tokens; when given, `prompt` is ignored (never re-encoded)
    logprobs: bool = False  # attach each generated token's log-probability row (TokenEvent.logprobs)
    echo_logprobs: bool = False  # score the prompt too (StreamStats.prompt_logprobs), in the same solve
    start: str | None = None  # one of limits.STARTS; None -> "warm" with warm_start=True, else "zero"
    halt: str = DEFAULT_HALT  # with tol: the halting rule, one of limits.HALTS ("kl": tol is in nats)

    def __post_init__(self) -> None:
        if self.start is None:
            self.start = "warm" if self.warm_start else DEFAULT_START
        if self.warm_start is None:
            self.warm_start = self.start == "warm"

    @property
    def noise_seed(self) -> int:
        return 0 if self.seed is None else int(self.seed)

    def ids(self, tokenizer: Tokenizer | None = None) -> list[int]:
        """The prompt's token ids: `prompt_ids` as given, else the prompt encoded by `tokenizer` (bytes when None)."""
        if self.prompt_ids is not None:
            return list(self.prompt_ids)
        return tokenizer.encode(self.prompt) if tokenizer is not None else encode(self.prompt)

    def validate(self, max_depth: int = DEPTH_MAX, vocab_size: int = 256) -> None:
        """Refuse what no model may be asked; `max_depth` is the model's cap (limits.model_depths), `vocab_size` the
        number of its token ids."""
        if self.depth is not None and not DEPTH_MIN <= int(self.depth) <= max_depth:
            raise ValueError(f"depth must be between {DEPTH_MIN} and {max_depth}")
        if self.tol is not None and not self.tol > 0:
            raise ValueError("tol must be positive")
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be {' or '.join(map(repr, SOLVERS))}")
        if self.start not in STARTS:
            raise ValueError(f"start must be {', '.join(map(repr, STARTS[:-1]))} or {STARTS[-1]!r}")
        if bool(self.warm_start) != (self.start == "warm"):
            raise ValueError(
                f"warm_start={bool(self.warm_start)} conflicts with start={self.start!r}: "
                "give start alone (warm_start=true is start='warm')"
            )
        if self.halt not in HALTS:
            raise ValueError(f"halt must be {' or '.join(map(repr, HALTS))}")
        if self.max_tokens < 0:
            raise ValueError("max_tokens must be >= 0")
        if self.temperature < 0:
            raise ValueError("temperature must be >= 0")
        if not 0 < self.top_p <= 1:
            raise ValueError("top_p must be in (0, 1]")
        if self.prompt_ids is not None and not all(0 <= int(t) < vocab_size for t in self.prompt_ids):
            kind = "bytes: " if vocab_size == 256 else ""
            raise ValueError(f"prompt token ids are {kind}0..{vocab_size - 1}")


@dataclass
class TokenEvent:
    token_id: int
    text: str  # incremental decoded text ("" while a UTF-8 sequence is incomplete)
    iterations: int  # iterations used at the position whose logits chose this token
    residual: float  # that position's last relative residual
    logprobs: np.ndarray | None = None  # log-softmax row [V] that chose this token (GenerationRequest.logprobs)


@dataclass
class GenerationResult:
    text: str
    tokens: list[TokenEvent]
    finish_reason: str  # "stop" | "length"
    prompt_tokens: int
    completion_tokens: int
    mean_iterations: float
    final_residual: float
    stats: StreamStats | None = None  # the stream's stats (the echoed prompt's log probabilities among them)

    @classmethod
    def from_stream(cls, request: GenerationRequest, stream: TokenStream):
        """Run the stream to its end and sum it up."""
        events = list(stream)
        stats = stream.stats
        return cls(
            text="".join(e.text for e in events),
            tokens=events,
            finish_reason=stats.finish_reason,
            prompt_tokens=len(stats.prompt_ids),
            completion_tokens=len(events),
            mean_iterations=float(np.mean(stats.iterations)) if stats.iterations else 0.0,
            final_residual=stats.residuals[-1] if stats.residuals else 0.0,
            stats=stats,
        )


@dataclass
class StreamStats:
    """What a stream did: why it ended ("stop" | "length"), and each token's iterations and residual."""

    finish_reason: str = "length"
    completion_tokens: int = 0
    depth: int = 0  # the fixed depth, or the cap on halting, that the solve ran with
    start: str = DEFAULT_START  # the start used (limits.STARTS)
    noise_seed: int | None = None  # the seed of the noise start's normals (start "noise" only)
    halt: str | None = None  # the halting rule used (limits.HALTS); None at a fixed depth
    iterations: list[int] = field(default_factory=list)
    residuals: list[float] = field(default_factory=list)
    prompt_ids: list[int] = field(default_factory=list)  # the prompt's tokens as solved
    # with echo_logprobs: row i [V] is the distribution that predicted prompt token i + 1 ([T - 1, V])
    prompt_logprobs: np.ndarray | None = None


class TokenStream:
    """The token events of one request; `finish_reason` and `stats` are final once it is exhausted."""

    def __init__(self, events: Iterator[TokenEvent], stats: StreamStats):
        self._events = events
        self.stats = stats

    def __iter__(self) -> TokenStream:
        return self

    def __next__(self) -> TokenEvent:
        return next(self._events)

    @property
    def finish_reason(self) -> str:
        return self.stats.finish_reason

    def close(self) -> None:
        """Stop early (a client that went away): the generation ends and leaves any batch it was in."""
        close = getattr(self._events, "close", None)
        if close is not None:
            close()


def choose_token(logits: np.ndarray, temperature: float, top_p: float, rng: np.random.Generator) -> int:
    """Greedy argmax at temperature 0 (lowest id on ties), else temperature + nucleus sampling."""
    if temperature <= 0:
        return int(np.argmax(logits))
    probs = softmax(logits.astype(np.float64) / temperature)
    if top_p < 1.0:
        order = np.argsort(-probs, kind="stable")
        cumulative = np.cumsum(probs[order])
        keep = order[: int(np.searchsorted(cumulative, top_p) + 1)]
        mask = np.zeros_like(probs)
        mask[keep] = probs[keep]
        probs = mask / mask.sum()
    return int(rng.choice(len(probs), p=probs))


def _held_back(text: str, stops: tuple[str, ...]) -> int:
    """How many trailing characters of text could still begin a stop string."""
    longest = 0
    for stop in stops:
        for n in range(min(len(stop) - 1, len(text)), 0, -1):
            if text.endswith(stop[:n]):
                longest = max(longest, n)
                break
    return longest


def _solve(model, cache: DecodeCache, ids: list[int], *args, **kwargs):
    """decoder.process, inside the model's `solving` while it runs when it has one (batched_generator.BatchedModel)."""
    solving = getattr(model, "solving", None)
    with solving(len(ids)) if solving else nullcontext():
        return process(model, cache, ids, *args, **kwargs)


class Generator:
    """Text generation over the exported demo model. Thread-safe: each call keeps its own cache."""

    def __init__(self, onnx_dir: Path, int8: bool = False, threads: int = 1, precision: str | None = None):
        self.model = OnnxEqLM(Path(onnx_dir), int8=int8, threads=threads, precision=precision)
        self.manifest = self.model.manifest
        self.model_id: str = self.manifest.get("model_id", DEFAULT_MODEL_ID)
        self.max_positions = self.model.max_positions
        # the model's own tokens (the manifest's `tokenizer`: UTF-8 bytes, or GPT-2's BPE)
        self.tokenizer: Tokenizer = get_tokenizer(tokenizer_name(self.manifest))
        # the model's own default depth and cap (manifest `default_depth`, `max_depth`; DEPTH_MAX when it has none)
        self.default_depth, self.max_depth = model_depths(self.manifest)

    def _tokens(self, request: GenerationRequest, stats: StreamStats) -> Iterator[TokenEvent]:
        """Every generated token (before stop-string handling)."""
        # what the model does not take (an explicit transformer: a depth other than its layer count, a tol, ...)
        self.model.check(
            request.depth, request.tol, request.solver, start=request.start, halt=request.halt,
            warm_start=request.warm_start,
        )  # fmt: skip
        request.validate(self.max_depth, self.model.vocab_size)
        if request.tol is not None:
            depth = int(request.depth or self.max_depth)
        else:
            depth = int(request.depth or self.default_depth)
        stats.depth, stats.start = depth, request.start
        stats.halt = request.halt if request.tol is not None else None
        noise = request.start == "noise"
        stats.noise_seed = request.noise_seed if noise else None
        given = request.ids(self.tokenizer)
        ids = given or self.tokenizer.encode(self.manifest.get("empty_prompt", "\n"))
        scoring = request.logprobs or request.echo_logprobs
        if scoring and len(ids) > self.max_positions:
            raise ContextLengthExceeded(len(ids), self.max_positions)
        if not scoring:  # generation keeps the documented left-truncation
            ids = ids[-(self.max_positions - 1) :] if request.max_tokens > 0 else ids[-self.max_positions :]
        stats.prompt_ids = list(given)
        rng = np.random.default_rng(request.seed)
        # the prompt and every token but the last are solved and cached
        cache = DecodeCache(self.model, depth, positions=len(ids) + max(0, request.max_tokens - 1))
        warm = request.start == "warm"
        d = self.model.d_model

        def start(count: int) -> np.ndarray | None:  # the noise start of the next `count` positions
            return start_states(request.noise_seed, cache.length, count, d) if noise else None

        z, iterations, residual = _solve(
            self.model, cache, ids, depth, request.tol, request.solver, start(len(ids)), settle=warm, halt=request.halt
        )
        last_z, last_iter, last_res = z[:, -1:], int(iterations[-1]), float(residual[-1])
        next_logits = None
        if request.echo_logprobs:  # the whole prompt was one batched solve: one head call scores every position
            all_logits = self.model.head(z)[0]
            stats.prompt_logprobs = log_softmax(all_logits[:-1]) if given else np.zeros((0, self.model.vocab_size))
            next_logits = all_logits[-1]
        decoder = self.tokenizer.incremental_decoder()
        for n in range(request.max_tokens):
            logits = next_logits if next_logits is not None else self.model.head(last_z)[0, -1]
            next_logits = None
            token = choose_token(logits, request.temperature, request.top_p, rng)
            stats.completion_tokens += 1
            stats.iterations.append(last_iter)
            stats.residuals.append(last_res)
            row = log_softmax(logits) if request.logprobs else None
            yield TokenEvent(token, decoder.push(token), last_iter, last_res, row)
            if n == request.max_tokens - 1:
                break
            if cache.length >= self.max_positions:
                stats.finish_reason = "length"
                return
            z0 = last_z if warm else start(1)
            z, iterations, residual = _solve(
                self.model, cache, [token], depth, request.tol, request.solver, z0, settle=warm, halt=request.halt
            )
            last_z, last_iter, last_res = z, int(iterations[0]), float(residual[0])
        stats.finish_reason = "length"

    def _stream(self, request: GenerationRequest, stats: StreamStats) -> Iterator[TokenEvent]:
        stops = tuple(s for s in request.stop if s)
        if not stops:
            yield from self._tokens(request, stats)
            return
        text = ""
        emitted = 0  # characters of text already sent
        pending: list[TokenEvent] = []
        for event in self._tokens(request, stats):
            text += event.text
            pending.append(event)
            hits = [i for i in (text.find(s) for s in stops) if i >= 0]
            if hits:
                cut = min(hits)
                for ev in pending:
                    room = cut - emitted
                    if room <= 0:
                        break
                    piece = ev.text[:room]
                    emitted += len(piece)
                    yield TokenEvent(ev.token_id, piece, ev.iterations, ev.residual, ev.logprobs)
                stats.finish_reason = "stop"
                return
            safe = len(text) - _held_back(text, stops)
            while pending and emitted + len(pending[0].text) <= safe:
                ev = pending.pop(0)
                emitted += len(ev.text)
                yield ev
        yield from pending

    def stream(self, request: GenerationRequest) -> TokenStream:
        """Token events as they are produced; text that may begin a stop string is held back until resolved.

        Nothing runs until the first event is asked for; once the stream is exhausted its `finish_reason`
        says whether a stop string or the length limit ended it.
        """
        stats = StreamStats()
        return TokenStream(self._stream(request, stats), stats)

    def generate(self, request: GenerationRequest) -> GenerationResult:
        return GenerationResult.from_stream(request, self.stream(request))
