"""The onnxruntime decoder (never torch): the exported embed/step/head graphs and the per-iteration K/V cache.

`process` runs new positions after the cached ones as export.py's manifest "semantics" describe: fixed depth,
adaptive per-position halting by tolerance (on the residual or on the KL of successive next-byte distributions), any
start state, warm start (settled context), Picard or Anderson (the iteration itself is fixed_point.py's).
An explicit transformer's export (export_explicit.py) runs through the same loop: slot i runs layer i's graph, the
start is the embedding, and its depth is its layer count (eqlm/manifest.py refuses any other control).
Generation (generation.py) and scoring (scoring.py) both solve through it.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import onnxruntime as ort

from .chained import chained_session, past_inputs
from .fixed_point import FixedPoint, NumpyOps, halting_rule
from .limits import ANDERSON_PICARD_FIRST, DEFAULT_HALT, DEFAULT_SOLVER, DEFAULT_START
from .manifest import check_controls, check_precision, is_explicit, layer_roles, precision_graphs, requested_controls

# an iteration graph with fewer weight bytes than this runs on one onnxruntime thread: splitting its small products
# over two costs more in synchronisation than it saves (the 124M explicit model's int8 layers, 7.2 MB each: one
# reader 130 to 133 tokens/s with them on one thread, 116 on two; its fp32 layers, 28 MB, and the 121M anytime
# model's int8 step, 35 MB, are faster on two)
SMALL_GRAPH_BYTES = 16 << 20


def session_options(threads: int, spin_in_call: bool = False) -> ort.SessionOptions:
    """onnxruntime's options for a graph run on `threads` intra-op threads. Above one, waiting threads sleep instead
    of spinning: on a shared or busy CPU a spinning pool's barrier stalls every op (a 121M model's one reader at 2
    threads ran 2.1x faster so, under load 2.3), and a batch's rows need the cores between its calls.

    `spin_in_call`: the threads spin between the ops of one call and sleep as it returns
    (`session.force_spinning_stop`), for a graph of many products run once a position (OnnxEqLM.chain_options)."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    if threads > 1:
        options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin_in_call else "0")
        if spin_in_call:
            options.add_session_config_entry("session.force_spinning_stop", "1")
    return options


def graph_bytes(onnx_dir: Path, manifest: dict, name: str) -> int:
    """The bytes of graph file `name` and of the external-data files its role reads (the manifest's
    `external_data`)."""
    roles = {role for role, graph in (manifest.get("graphs") or {}).items() if graph == name}
    size = (onnx_dir / name).stat().st_size
    for data, readers in (manifest.get("external_data") or {}).items():
        if roles & set(readers):
            size += (onnx_dir / data).stat().st_size
    return size


class ContextLengthExceeded(ValueError):
    """A prompt to be scored is longer than the model's context (scoring never drops its first bytes)."""

    def __init__(self, tokens: int, limit: int):
        super().__init__(f"the prompt is {tokens} tokens; this model's context is {limit} tokens")
        self.tokens, self.limit = tokens, limit


class OnnxEqLM:
    """The ONNX graphs and the manifest, with the per-iteration cached solve: an EqLM's embed, step and head, or an
    explicit transformer's embed, one graph per layer and head (`explicit`; slot i runs `layer_sessions[i]`)."""

    def __init__(self, onnx_dir: Path, int8: bool = False, threads: int = 1, precision: str | None = None):
        self.onnx_dir = Path(onnx_dir)
        self.manifest = json.loads((self.onnx_dir / "manifest.json").read_text())
        self.precision = precision or ("int8" if int8 else "fp32")
        check_precision(self.manifest, self.precision)
        options, one_thread = session_options(threads), session_options(1)
        graphs = precision_graphs(self.manifest, self.precision)

        def small(name: str) -> bool:
            return threads > 1 and graph_bytes(self.onnx_dir, self.manifest, name) < SMALL_GRAPH_BYTES

        def session(name: str, iteration: bool = False) -> ort.InferenceSession:
            opts = one_thread if iteration and small(name) else options
            return ort.InferenceSession(str(self.onnx_dir / name), opts, providers=["CPUExecutionProvider"])

        self.explicit = is_explicit(self.manifest)
        self.embed_sess = session(graphs["embed"])
        self.step_sess = None if self.explicit else session(graphs["step"], iteration=True)
        # an explicit transformer's layers chained into one graph (eqlm/chained.py) run its passes (chain_options:
        # its threads); its layers one graph at a time load when first used (a solve that records its steps), so a
        # runtime that never needs them holds its layer weights once
        layers = [graphs[role] for role in layer_roles(self.manifest)]
        self._layer_names, self._loading = layers, threading.Lock()
        self._layer_sessions: list[ort.InferenceSession] | None = None if layers else []
        self._layer_session = lambda name: session(name, iteration=True)
        self.chain_session = (
            chained_session(self.onnx_dir, layers, self.chain_options(layers, threads)) if layers else None
        )
        self.head_sess = session(graphs["head"])
        # a layer graph takes no `inj`: each session is fed only the inputs it declares
        self.inputs = {id(self.step_sess): [i.name for i in self.step_sess.get_inputs()]} if self.step_sess else {}
        self.d_model = int(self.manifest["d_model"])
        self.n_heads = int(self.manifest["n_heads"])
        self.head_dim = int(self.manifest["head_dim"])
        self.max_positions = int(self.manifest["max_positions"])
        self.vocab_size = int(self.manifest["vocab_size"])

    def chain_options(self, layers: list[str], threads: int) -> ort.SessionOptions:
        """The chained layers' options: one thread where the layers hold fewer weight bytes than SMALL_GRAPH_BYTES
        together, else `threads`, spinning inside a call. A pass of the 124M model makes 72 products, each of which
        woke a sleeping thread: its int8 one reader on 2 cores of an AMD EPYC (Zen 4) made 106-113 tokens/s with the
        chain on one thread and 139-150 on two spinning inside the call (beside a process that keeps one core busy,
        75-107 against 66-93); fp32 (28 MB layers, two sleeping threads before) 46-52 either way. explicit-demo's
        chain (a few KB) is 12% slower on two."""
        held = sum(graph_bytes(self.onnx_dir, self.manifest, name) for name in layers)
        if held < SMALL_GRAPH_BYTES:
            return session_options(1)
        return session_options(threads, spin_in_call=True)

    def embed(self, ids: np.ndarray, positions: np.ndarray) -> np.ndarray:
        return self.embed_sess.run(None, {"input_ids": ids.astype(np.int64), "positions": positions.astype(np.int64)})[
            0
        ]

    @property
    def layer_sessions(self) -> list[ort.InferenceSession]:
        """An explicit transformer's layer graphs, one session each (slot order); [] for an EqLM."""
        return self.load_layers()

    def load_layers(self) -> list[ort.InferenceSession]:
        """layer_sessions, loaded on the first call."""
        with self._loading:
            if self._layer_sessions is None:
                sessions = [self._layer_session(name) for name in self._layer_names]
                self.inputs |= {id(s): [i.name for i in s.get_inputs()] for s in sessions}
                self._layer_sessions = sessions
        return self._layer_sessions

    def chained_pass(self, z: np.ndarray, past: list[tuple[np.ndarray, np.ndarray]]):
        """An explicit transformer's pass of new positions through all its layers in one call (eqlm/chained.py):
        (the last layer's state, [(k, v) of each layer])."""
        out = self.chain_session.run(None, {"z": z, **past_inputs(*zip(*past, strict=True))})
        return out[0], list(zip(out[1::2], out[2::2], strict=True))

    def step(self, z, inj, past_k, past_v, slot: int | None = None):
        """One iteration (an EqLM's step) or one layer (an explicit transformer's layer `slot`, which it needs)."""
        if self.explicit:
            if slot is None or not 0 <= slot < len(self.layer_sessions):
                raise ValueError(f"an explicit transformer's slot is one of its {len(self.layer_sessions)} layers")
            sess = self.layer_sessions[slot]
        else:
            sess = self.step_sess
        feed = {"z": z, "inj": inj, "past_k": past_k, "past_v": past_v}
        return sess.run(None, {name: feed[name] for name in self.inputs[id(sess)]})

    def start_state(self, inj: np.ndarray) -> np.ndarray:
        """The state a solve starts from without a given one: zero (an EqLM), the embedding (explicit)."""
        return inj.copy() if self.explicit else np.zeros_like(inj)

    def check(self, depth: int | None, tol: float | None = None, solver: str = DEFAULT_SOLVER, **given) -> None:
        """Refuse (manifest.ControlRefused, a ValueError) what this model does not take: an explicit transformer
        takes its layer count as depth, and no tol, solver but Picard, start or halting rule."""
        check_controls(self.manifest, requested_controls(depth=depth, tol=tol, solver=solver, **given))

    def head(self, z: np.ndarray) -> np.ndarray:
        return self.head_sess.run(None, {"z": z})[0]

    def empty_kv(self, batch: int = 1) -> np.ndarray:
        return np.zeros((batch, self.n_heads, 0, self.head_dim), dtype=np.float32)

    def joint_states(self, ids: np.ndarray, depths: list[int]) -> tuple[np.ndarray, dict[int, np.ndarray]]:
        """(injection, {depth: states [B, T, D]}) for whole windows, all positions iterated together from z = 0 (an
        explicit transformer: through its layers from the embedding, at its one depth)."""
        for depth in depths:
            self.check(depth)
        b, t = ids.shape
        inj = self.embed(ids, np.broadcast_to(np.arange(t), (b, t)))
        z = self.start_state(inj)
        empty = self.empty_kv(b)
        if self.explicit and depths:  # its one depth, every layer in one call
            return inj, {depths[0]: self.chained_pass(z, [(empty, empty)] * len(self._layer_names))[0]}
        out = {}
        for i in range(1, max(depths) + 1):
            z = self.step(z, inj, empty, empty, i - 1)[0]
            if i in depths:
                out[i] = z
        return inj, out

    def full_solve(self, ids: np.ndarray, depths: list[int]) -> dict[int, np.ndarray]:
        """Logits [B, T, V] at each depth for whole windows (cold start, fixed depth): the bits/byte path."""
        return {d: self.head(z) for d, z in self.joint_states(ids, depths)[1].items()}


class DecodeCache:
    """Per-iteration K/V of every processed position: slots x [1, H, positions, Dh], `positions` the most a solve
    will cache (a generation's prompt and tokens), at most the model's context (max_positions, the default).

    Its arrays are allocated zeroed and their pages touched as positions are written; at the model's context, a
    124M explicit transformer's cache is 2 x 38 MB, and writing its first positions took 8 ms in a request that
    caches 40 (numpy asks for huge pages, which the kernel zeroes whole)."""

    def __init__(self, model: OnnxEqLM, slots: int, positions: int | None = None):
        capacity = model.max_positions if positions is None else max(1, min(int(positions), model.max_positions))
        shape = (slots, 1, model.n_heads, capacity, model.head_dim)
        self.k = np.zeros(shape, dtype=np.float32)
        self.v = np.zeros(shape, dtype=np.float32)
        self.slots = slots
        self.length = 0

    def view(self, slot: int) -> tuple[np.ndarray, np.ndarray]:
        """Iteration slot `slot`'s K and V of the cached positions, [H, length, Dh] each: views, not copies."""
        return self.k[slot, 0, :, : self.length], self.v[slot, 0, :, : self.length]

    def past(self, slot: int) -> tuple[np.ndarray, np.ndarray]:
        """view's K and V as a graph takes them: [1, H, length, Dh], contiguous."""
        return tuple(np.ascontiguousarray(x[None]) for x in self.view(slot))

    def put(self, slot, k: np.ndarray, v: np.ndarray) -> None:
        """K and V [1, H, t, Dh] of t new positions into iteration slot `slot` (or [slots, 1, H, t, Dh] into every
        slot, `slot` a slice)."""
        t = k.shape[-2]
        if self.length + t > self.k.shape[3]:  # a slice past the end would take the write silently and keep none
            raise ValueError(f"the cache holds {self.k.shape[3]} positions, not {self.length + t}")
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

    Anderson always settles: a secant method needs the map it accelerates to stay put, and against the per-iteration
    cache the context's K/V change at every iteration (it was slower than Picard there; bench/anderson.py). It also
    runs limits.ANDERSON_PICARD_FIRST Picard iterations before it mixes.

    An explicit transformer (model.explicit) takes none of tol, another solver, z0, settle or another halting rule
    (ValueError); its depth is its layer count, and the residual it returns is NaN: it has no fixed point.
    """
    if model.explicit:  # a given start state is refused as any start is
        model.check(depth, tol, solver, start=DEFAULT_START if z0 is None else "given", halt=halt, warm_start=settle)
    settle = settle or solver == "anderson"
    t = len(ids)
    p = cache.length
    inj = model.embed(np.asarray([ids]), np.arange(p, p + t)[None, :])
    z = model.start_state(inj) if z0 is None else z0.astype(np.float32).reshape(inj.shape).copy()
    if model.explicit and history is None:
        z_out = _explicit_pass(model, cache, z)
        cache.length += t
        return z_out, np.full(t, cache.slots, dtype=np.int64), np.full(t, np.nan)

    # an EqLM's decoded position by Picard (no halting, or the residual's), when its model batches: the whole solve
    # in one hand-over, the model's scheduler iterating it with the other rows' solves (batch_solve)
    solve_pass = getattr(model, "solve_pass", None)
    whole = (
        not model.explicit
        and t == 1
        and depth >= 1
        and history is None
        and solver == "picard"
        and (tol is None or halt == "residual")
    )
    solved = solve_pass(z, inj, cache, depth, tol, settle) if solve_pass is not None and whole else None
    if solved is not None:
        z, done, last = solved
        iterations, residual = np.array([done], dtype=np.int64), np.array([last], dtype=np.float64)
    else:
        z, done, iterations, residual = _solve_step_by_step(
            model, cache, z, inj, depth, solver, tol, halt, settle, history
        )
    if settle or done < cache.slots:  # halted early: later iteration slots hold the frozen states' K/V
        empty = model.empty_kv()
        _, k, v, _ = model.step(z, inj, empty, empty)
        for slot in range(0 if settle else done, cache.slots):
            cache.put(slot, k, v)
    cache.length += t
    if model.explicit:  # a layer's relative update is no fixed-point residual: report none
        return z, iterations, np.full(t, np.nan)
    return z, iterations, residual


def _explicit_pass(model, cache: DecodeCache, z: np.ndarray) -> np.ndarray:
    """An explicit transformer's pass of new positions through all its layers, each layer's K/V written into
    `cache`: a decoded position, or a prompt, with the other rows' when its model batches (batched_generator.
    BatchedModel's `layers_pass` and `prompt_pass`, one call for every row), else in one call of its chained layers
    (eqlm/chained.py)."""
    batched = getattr(model, "layers_pass" if z.shape[1] == 1 else "prompt_pass", None)
    if batched is not None and (z_out := batched(z, cache)) is not None:
        return z_out
    z_out, kv = model.chained_pass(z, [cache.past(slot) for slot in range(cache.slots)])
    for slot, (k, v) in enumerate(kv):
        cache.put(slot, k, v)
    return z_out


def _solve_step_by_step(model, cache: DecodeCache, z, inj, depth, solver, tol, halt, settle, history):
    """process's solve on this thread, one model call a step: (z, iterations done, iterations [T], residual [T])."""

    def step(z: np.ndarray, slot: int) -> tuple[np.ndarray, np.ndarray]:
        past_k, past_v = cache.past(slot)
        fz, k, v, r = model.step(z, inj, past_k, past_v, slot)
        if not settle:  # a settled solve writes its final states' K/V into every slot at the end
            cache.put(slot, k, v)
        return fz, r

    ops = NumpyOps()
    solve = FixedPoint(
        step,
        z,
        depth,
        ops=ops,
        solver=solver,
        halt=halting_rule(halt, tol, model.head, ops),
        anderson_picard_first=ANDERSON_PICARD_FIRST,
    )
    for _ in solve:
        if history is not None:
            history.append(solve.step_residual[0].astype(np.float64))
    return solve.z, solve.count, solve.iterations[0], solve.residual[0]
