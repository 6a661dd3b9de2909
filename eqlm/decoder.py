"""The onnxruntime decoder (never torch): the exported embed/step/head graphs and the per-iteration K/V cache.

`process` runs new positions after the cached ones as export.py's manifest "semantics" describe: fixed depth,
adaptive per-position halting by tolerance (on the residual or on the KL of successive next-byte distributions), any
start state, warm start (settled context), Picard or Anderson (the iteration itself is fixed_point.py's).
Generation (generation.py) and scoring (scoring.py) both solve through it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnxruntime as ort

from .fixed_point import FixedPoint, NumpyOps, halting_rule
from .limits import DEFAULT_HALT


class ContextLengthExceeded(ValueError):
    """A prompt to be scored is longer than the model's context (scoring never drops its first bytes)."""

    def __init__(self, tokens: int, limit: int):
        super().__init__(f"the prompt is {tokens} tokens; this model's context is {limit} tokens")
        self.tokens, self.limit = tokens, limit


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
    halt: str = DEFAULT_HALT,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Run T new positions after the cached ones; fills the cache. Returns (final z [1,T,D], iterations, residual).

    With `tol`, `halt` names the rule (limits.HALTS): the relative residual, or the KL between the head's next-byte
    distributions before and after an iteration (fixed_point.kl_below; one head call per iteration).

    `history`, when given, receives each iteration's residuals [T] (position i's curve is the first iterations[i]).
    `settle` (warm start) stores the K/V of the new positions' final states in every iteration slot, so positions
    processed later iterate against these solved states (the context's fixed point) from their first iteration on,
    instead of against the states this solve passed through.
    """
    t = len(ids)
    p = cache.length
    inj = model.embed(np.asarray([ids]), np.arange(p, p + t)[None, :])
    z = np.zeros_like(inj) if z0 is None else z0.astype(np.float32).reshape(inj.shape).copy()

    def step(z: np.ndarray, slot: int) -> tuple[np.ndarray, np.ndarray]:
        past_k, past_v = cache.past(slot)
        fz, k, v, r = model.step(z, inj, past_k, past_v)
        if not settle:  # a settled solve writes its final states' K/V into every slot at the end
            cache.put(slot, k, v)
        return fz, r

    ops = NumpyOps()
    solve = FixedPoint(step, z, depth, ops=ops, solver=solver, halt=halting_rule(halt, tol, model.head, ops))
    for _ in solve:
        if history is not None:
            history.append(solve.step_residual[0].astype(np.float64))
    z, done = solve.z, solve.count
    if settle or done < cache.slots:  # halted early: later iteration slots hold the frozen states' K/V
        empty = model.empty_kv()
        _, k, v, _ = model.step(z, inj, empty, empty)
        for slot in range(0 if settle else done, cache.slots):
            cache.put(slot, k, v)
    cache.length += t
    return z, solve.iterations[0], solve.residual[0]
