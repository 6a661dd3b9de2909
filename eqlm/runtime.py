"""The generation service on onnxruntime + numpy (never torch): what the web process and the /v1/ API use.

It drives the exported embed/step/head graphs with a per-iteration key/value cache (see export.py's manifest
"semantics"): fixed depth, adaptive per-token halting by tolerance, warm start, Picard or Anderson, greedy,
temperature and top-p sampling with a seeded numpy Generator, and stop strings.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnxruntime as ort

from .logprobs import log_softmax
from .tokenizer import IncrementalDecoder, encode

DEFAULT_DEPTH = 8
MAX_DEPTH = 64
LN2 = math.log(2)


@dataclass
class GenerationRequest:
    prompt: str
    max_tokens: int = 64
    depth: int | None = None  # 1..64; None -> the model's default_depth unless tol is given (then the cap is 64)
    tol: float | None = None
    warm_start: bool = False
    solver: str = "picard"  # or "anderson"
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = None
    stop: tuple[str, ...] = ()
    prompt_ids: tuple[int, ...] | None = None  # raw byte tokens; when given, `prompt` is ignored (never re-encoded)
    logprobs: bool = False  # attach each generated token's log-probability row (TokenEvent.logprobs)
    echo_logprobs: bool = False  # score the prompt too (StreamStats.prompt_logprobs), in the same solve

    def ids(self) -> list[int]:
        return list(self.prompt_ids) if self.prompt_ids is not None else encode(self.prompt)

    def validate(self) -> None:
        if self.depth is not None and not 1 <= int(self.depth) <= MAX_DEPTH:
            raise ValueError(f"depth must be between 1 and {MAX_DEPTH}")
        if self.tol is not None and not self.tol > 0:
            raise ValueError("tol must be positive")
        if self.solver not in ("picard", "anderson"):
            raise ValueError("solver must be 'picard' or 'anderson'")
        if self.max_tokens < 0:
            raise ValueError("max_tokens must be >= 0")
        if self.temperature < 0:
            raise ValueError("temperature must be >= 0")
        if not 0 < self.top_p <= 1:
            raise ValueError("top_p must be in (0, 1]")
        if self.prompt_ids is not None and not all(0 <= int(t) < 256 for t in self.prompt_ids):
            raise ValueError("prompt token ids are bytes: 0..255")


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
            prompt_tokens=len(request.ids()),
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


class ContextLengthExceeded(ValueError):
    """A prompt to be scored is longer than the model's context (scoring never drops its first bytes)."""

    def __init__(self, tokens: int, limit: int):
        super().__init__(f"the prompt is {tokens} tokens; this model's context is {limit} tokens")
        self.tokens, self.limit = tokens, limit


class _Anderson:
    """Per-position Anderson acceleration (memory m, mixing 1); same algebra as eqlm.AndersonState."""

    def __init__(self, m: int = 5, reg: float = 1e-6):
        self.m, self.reg = m, reg
        self.xs: list[np.ndarray] = []
        self.gs: list[np.ndarray] = []

    def update(self, x: np.ndarray, fx: np.ndarray) -> np.ndarray:
        self.xs = [*self.xs, x][-self.m :]
        self.gs = [*self.gs, fx - x][-self.m :]
        n = len(self.gs)
        if n == 1:
            return fx
        g = np.stack(self.gs, axis=-1).astype(np.float64)  # [..., D, n]
        gram = np.swapaxes(g, -1, -2) @ g
        scale = np.diagonal(gram, axis1=-2, axis2=-1).mean(-1)[..., None, None] + 1e-12
        gram = gram + self.reg * scale * np.eye(n)
        w = np.linalg.solve(gram, np.ones((*gram.shape[:-1], 1)))
        alpha = w / w.sum(axis=-2, keepdims=True)
        fxs = np.stack([a + b for a, b in zip(self.xs, self.gs, strict=True)], axis=-1).astype(np.float64)
        return (fxs @ alpha)[..., 0].astype(np.float32)


class OnnxEqLM:
    """The three ONNX graphs and the manifest, with the per-iteration cached solve."""

    def __init__(self, onnx_dir: Path, int8: bool = False, threads: int = 1):
        self.onnx_dir = Path(onnx_dir)
        self.manifest = json.loads((self.onnx_dir / "manifest.json").read_text())
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        graphs = self.manifest["graphs"]
        step_file = graphs.get("step_int8") if int8 and graphs.get("step_int8") else graphs["step"]

        def session(name: str) -> ort.InferenceSession:
            return ort.InferenceSession(str(self.onnx_dir / name), options, providers=["CPUExecutionProvider"])

        self.embed_sess = session(graphs["embed"])
        self.step_sess = session(step_file)
        self.head_sess = session(graphs["head"])
        self.d_model = int(self.manifest["d_model"])
        self.n_heads = int(self.manifest["n_heads"])
        self.head_dim = int(self.manifest["head_dim"])
        self.max_positions = int(self.manifest["max_positions"])
        self.vocab_size = int(self.manifest["vocab_size"])

    def embed(self, ids: np.ndarray, positions: np.ndarray) -> np.ndarray:
        return self.embed_sess.run(None, {"input_ids": ids.astype(np.int64), "positions": positions.astype(np.int64)})[
            0
        ]

    def step(self, z, inj, past_k, past_v):
        return self.step_sess.run(None, {"z": z, "inj": inj, "past_k": past_k, "past_v": past_v})

    def head(self, z: np.ndarray) -> np.ndarray:
        return self.head_sess.run(None, {"z": z})[0]

    def empty_kv(self, batch: int = 1) -> np.ndarray:
        return np.zeros((batch, self.n_heads, 0, self.head_dim), dtype=np.float32)

    def joint_states(self, ids: np.ndarray, depths: list[int]) -> tuple[np.ndarray, dict[int, np.ndarray]]:
        """(injection, {depth: states [B, T, D]}) for whole windows, all positions iterated together from z = 0."""
        b, t = ids.shape
        inj = self.embed(ids, np.broadcast_to(np.arange(t), (b, t)))
        z = np.zeros_like(inj)
        empty = self.empty_kv(b)
        out = {}
        for i in range(1, max(depths) + 1):
            z = self.step(z, inj, empty, empty)[0]
            if i in depths:
                out[i] = z
        return inj, out

    def full_solve(self, ids: np.ndarray, depths: list[int]) -> dict[int, np.ndarray]:
        """Logits [B, T, V] at each depth for whole windows (cold start, fixed depth): the bits/byte path."""
        return {d: self.head(z) for d, z in self.joint_states(ids, depths)[1].items()}


class DecodeCache:
    """Per-iteration K/V of every processed position: slots x [1, H, max_positions, Dh]."""

    def __init__(self, model: OnnxEqLM, slots: int):
        shape = (slots, 1, model.n_heads, model.max_positions, model.head_dim)
        self.k = np.zeros(shape, dtype=np.float32)
        self.v = np.zeros(shape, dtype=np.float32)
        self.slots = slots
        self.length = 0

    def past(self, slot: int) -> tuple[np.ndarray, np.ndarray]:
        p = self.length
        return np.ascontiguousarray(self.k[slot, :, :, :p]), np.ascontiguousarray(self.v[slot, :, :, :p])

    def put(self, slot, k: np.ndarray, v: np.ndarray) -> None:
        t = k.shape[2]
        self.k[slot, :, :, self.length : self.length + t] = k
        self.v[slot, :, :, self.length : self.length + t] = v


def process(
    model: OnnxEqLM,
    cache: DecodeCache,
    ids: list[int],
    depth: int,
    tol: float | None,
    solver: str,
    z0: np.ndarray | None = None,
    history: list[np.ndarray] | None = None,
    settle: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Run T new positions after the cached ones; fills the cache. Returns (final z [1,T,D], iterations, residual).

    `history`, when given, receives each iteration's residuals [T] (position i's curve is the first iterations[i]).
    `settle` (warm start) stores the K/V of the new positions' final states in every iteration slot, so positions
    processed later iterate against these solved states (the context's fixed point) from their first iteration on,
    instead of against the states this solve passed through.
    """
    t = len(ids)
    p = cache.length
    inj = model.embed(np.asarray([ids]), np.arange(p, p + t)[None, :])
    z = np.zeros_like(inj) if z0 is None else z0.astype(np.float32).reshape(inj.shape).copy()
    active = np.ones(t, dtype=bool)
    iterations = np.zeros(t, dtype=np.int64)
    residual = np.full(t, np.inf, dtype=np.float64)
    anderson = _Anderson() if solver == "anderson" else None
    done = 0
    for slot in range(depth):
        past_k, past_v = cache.past(slot)
        fz, k, v, r = model.step(z, inj, past_k, past_v)
        if not settle:  # a settled solve writes its final states' K/V into every slot at the end
            cache.put(slot, k, v)
        new = anderson.update(z, fz) if anderson is not None else fz
        z = np.where(active[None, :, None], new, z)
        residual = np.where(active, r[0].astype(np.float64), residual)
        if history is not None:
            history.append(r[0].astype(np.float64))
        iterations += active
        done = slot + 1
        if tol is not None:
            active &= ~(r[0] < tol)
            if not active.any():
                break
    if settle or done < cache.slots:  # halted early: later iteration slots hold the frozen states' K/V
        empty = model.empty_kv()
        _, k, v, _ = model.step(z, inj, empty, empty)
        for slot in range(0 if settle else done, cache.slots):
            cache.put(slot, k, v)
    cache.length += t
    return z, iterations, residual


def choose_token(logits: np.ndarray, temperature: float, top_p: float, rng: np.random.Generator) -> int:
    """Greedy argmax at temperature 0 (lowest id on ties), else temperature + nucleus sampling."""
    if temperature <= 0:
        return int(np.argmax(logits))
    scaled = logits.astype(np.float64) / temperature
    probs = np.exp(scaled - scaled.max())
    probs /= probs.sum()
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


class Generator:
    """Text generation over the exported demo model. Thread-safe: each call keeps its own cache."""

    def __init__(self, onnx_dir: Path, int8: bool = False, threads: int = 1):
        self.model = OnnxEqLM(Path(onnx_dir), int8=int8, threads=threads)
        self.manifest = self.model.manifest
        self.model_id: str = self.manifest.get("model_id", "eqlm-demo")
        self.max_positions = self.model.max_positions
        self.default_depth = int(self.manifest.get("default_depth", DEFAULT_DEPTH))

    def _tokens(self, request: GenerationRequest, stats: StreamStats) -> Iterator[TokenEvent]:
        """Every generated token (before stop-string handling)."""
        request.validate()
        if request.tol is not None:
            depth = int(request.depth or MAX_DEPTH)
        else:
            depth = int(request.depth or self.default_depth)
        given = request.ids()
        ids = given or encode(self.manifest.get("empty_prompt", "\n"))
        scoring = request.logprobs or request.echo_logprobs
        if scoring and len(ids) > self.max_positions:
            raise ContextLengthExceeded(len(ids), self.max_positions)
        if not scoring:  # generation keeps the documented left-truncation
            ids = ids[-(self.max_positions - 1) :] if request.max_tokens > 0 else ids[-self.max_positions :]
        stats.prompt_ids = list(given)
        rng = np.random.default_rng(request.seed)
        cache = DecodeCache(self.model, depth)
        warm = request.warm_start
        z, iterations, residual = process(self.model, cache, ids, depth, request.tol, request.solver, settle=warm)
        last_z, last_iter, last_res = z[:, -1:], int(iterations[-1]), float(residual[-1])
        next_logits = None
        if request.echo_logprobs:  # the whole prompt was one batched solve: one head call scores every position
            all_logits = self.model.head(z)[0]
            stats.prompt_logprobs = log_softmax(all_logits[:-1]) if given else np.zeros((0, self.model.vocab_size))
            next_logits = all_logits[-1]
        decoder = IncrementalDecoder()
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
            z0 = last_z if warm else None
            z, iterations, residual = process(
                self.model, cache, [token], depth, request.tol, request.solver, z0, settle=warm
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
            lg = logits[d].astype(np.float64)
            m = lg.max(-1, keepdims=True)
            logz = (m + np.log(np.exp(lg - m).sum(-1, keepdims=True)))[..., 0]
            picked = np.take_along_axis(lg, targets[..., None], -1)[..., 0]
            totals[d] += float((logz - picked).sum())
        count += targets.size
    return {d: totals[d] / count / LN2 for d in depths}


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
    model: OnnxEqLM, ids: list[int], depth: int, tol: float | None = None, solver: str = "picard"
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
    solver: str = "picard",
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
    return -total / len(text) / LN2
