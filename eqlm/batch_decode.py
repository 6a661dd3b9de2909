"""Continuous batching: concurrent generations on one model share each iteration's weight read (never torch).

Each request keeps its own thread, cache, depth, halting, solver, sampling and stop strings: it runs
generation.Generator's loop as it would alone. The one difference is where a decoded position's iterations run:
a row's Picard solve of one new position (no halting, or the residual's) is handed to the model's `BatchScheduler`
whole (`solve_pass`), and the scheduler's thread iterates every row's solve in one call of the `step_batched` graph
an iteration (batch_solve.py); a KL-halting or Anderson row hands in each step (`step`). Each row attends to its own
past through the graph's per-row mask (export_batched.py), so rows at different positions, iteration slots and depths
run together. An explicit transformer's rows hand in their whole pass of a decoded position the same way
(`layers_pass`): the scheduler runs the rows through every layer in one call of the batched layers chained into one
graph (eqlm/chained.py), writing each layer's K/V into each row's cache (one hand-over and one call a token).
Requests join the batch when they start decoding and leave it when they end, halt or stop, at token and iteration
boundaries; the only member solves on its own thread, as alone (a lone client pays no hand-over).

Prompts (T > 1 new positions) batch with each other, as vLLM batches its prefills: a prompt's iteration (an EqLM's
step) or pass (an explicit transformer's, through all its layers) is handed to the scheduler while other prompts are
being solved, and the scheduler runs the prompts of the same past length in one call, whatever their iterations, each
row right-padded to the longest prompt with copies of its last position. Attention is causal, so a row's real
positions never see its padding: each row gets what it gets alone, to float rounding in fp32. int8 prompts run in a
per-row form of the lone int8 graphs (`prompt_session`: an EqLM's step, an explicit transformer's chained layers;
eqlm.quantize.per_row_activations with a mask of each row's positions), bit for bit: the lone graphs quantise a
call's activations on one scale, which would tie the rows together.

A row's head call of one position (its next token's logits, or KL halting's per-iteration distribution) goes the
same way when other streams are members: the head's matrix is read once for every row that asked together. A
next-token head call waits for the rows still inside their solves or just out of them (up to HEAD_WAIT_S), and for
the other decoding members' heads (up to MEMBER_WAIT_S), so the rows' heads run in one call a token and the rows
start their next solves together (on the 121M model, 8 rows at depth 12 made 34 head calls for 256 tokens so, 96 to
138 without the wait).

The scheduler runs a batch of steps once every row inside a decode solve has handed in its call, or `gather_s` after
the first one came (a row that is busy with its sampler or its client does not hold the others up for longer).
A row's result does not depend on the other rows: the graph computes each row as the step graph computes it alone,
to float rounding (a row beside longer ones can differ from alone by about an ulp where the kernels sum its padded
attention differently). The generator over this scheduler is eqlm.batched_generator's.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import onnxruntime as ort

from .batch_pasts import BatchPasts
from .batch_solve import Solve, iterate, prefix_mask, run_steps
from .chained import chained_session, past_inputs, stacked_outputs
from .decoder import DecodeCache, OnnxEqLM, session_options

GATHER_S = 0.002  # how long a batch waits for rows still working between their steps
# how long a row's next-token head call may wait for the rows still inside their solves, so that the head's matrix
# is read once for them all (a 121M model reads 343 MB per head call whether 1 row asks or 8)
HEAD_WAIT_S = 0.25
# how long a head call or an explicit transformer's pass waits for the members that are between calls (sampling,
# streaming to their client, embedding their next token) and have not yet handed in theirs: a row busy with a slow
# client holds the others up no longer (a pass of 8 rows of the 124M explicit model costs about 15 ms, one of 4
# about 11 ms)
MEMBER_WAIT_S = 0.01
MAX_ROWS = 16
# how long a prompt's iteration waits for the other prompts being solved to hand in theirs (one iteration of 8
# prompts of the 121M model costs about 40 ms, so a wait this long costs little and keeps the prompts together)
PROMPT_WAIT_S = 0.02
PROMPT_VALID = "prompt_valid"  # the int8 prompt step's mask of each row's own positions (quantize.per_row_activations)
IDLE_S = 30.0  # a scheduler thread with nothing to run for this long ends (a runtime that is dropped leaves none)


class _Call:
    """One row's pending step or head call and, once run, its outputs (or the error that the batch raised)."""

    def __init__(self, kind: str, *inputs, waits: bool = False):
        # "step" (z, inj, past_k, past_v), "pass" (z, cache), "head" (z), "prompt" (z, inj, past_k, past_v, slot)
        # or "solve" (z, inj, cache, depth, tol, settle)
        self.kind = kind
        self.inputs = inputs
        self.waits = waits  # a next-token head call, which waits for the rows still solving (HEAD_WAIT_S)
        self.since = time.monotonic()
        self.outputs: list[np.ndarray] | None = None
        self.error: BaseException | None = None
        self.done = threading.Event()


class BatchScheduler:
    """The batched iterations of one model: one thread that runs every waiting row's step in one graph call."""

    def __init__(
        self,
        model: OnnxEqLM,
        threads: int = 1,
        max_rows: int = MAX_ROWS,
        gather_s: float = GATHER_S,
        graphs: tuple[str, ...] = ("step_batched",),
        head_wait_s: float = HEAD_WAIT_S,
        member_wait_s: float = MEMBER_WAIT_S,
        prompt_wait_s: float = PROMPT_WAIT_S,
        prompt_session: tuple[ort.InferenceSession, list[str]] | None = None,
    ):
        """`graphs`: an EqLM's batched step, or an explicit transformer's batched layers in slot order."""
        folder, names = Path(model.onnx_dir), model.manifest["graphs"]
        self.graphs = tuple(graphs)
        files = [names[graph] for graph in graphs]
        self.sessions = [  # an explicit transformer's batched layers chained into one graph: a pass is one call
            chained_session(folder, files, model.chain_options(files, threads))
            if model.explicit
            else ort.InferenceSession(
                str(folder / files[0]), session_options(threads, spin_in_call=True), providers=["CPUExecutionProvider"]
            )
        ]
        self.prompt_session = prompt_session  # an EqLM's int8 step in its per-row prompt form; None: the model's
        self.max_rows, self.gather_s = max_rows, gather_s
        self.head_wait_s, self.member_wait_s, self.prompt_wait_s = head_wait_s, member_wait_s, prompt_wait_s
        self._solving = threading.local()  # whether this thread's row is inside a decode solve
        self.n_heads, self.head_dim = model.n_heads, model.head_dim
        self._cond = threading.Condition()
        self._pending: list[_Call] = []
        self._inside = 0  # rows inside a decode solve (each hands in its solve or a step, then waits for it)
        self._prompting = 0  # rows inside a batched prompt's solve
        self._decoding: set[int] = set()  # the threads of members that have asked for a next token's head
        self._after_solve: set[int] = set()  # the threads of rows out of a decode solve, their head not yet asked
        self._model = model  # its own graphs run the rows' heads and prompts
        self._solves: list[Solve] = []  # the decode solves in progress (batch_solve), the scheduler thread's own
        self._pasts = BatchPasts()  # an explicit transformer's rows' pasts between passes
        self.rows = 0  # streams that have joined and not yet left
        self.batches = 0  # graph calls run, and the rows they ran (for the bench and the tests)
        self.rows_run = 0
        self.largest = 0
        self.head_batches = 0
        self.largest_head = 0
        self.prompt_batches = 0  # prompt iterations run for more than one row, and the most rows in one
        self.largest_prompt = 0
        self.solves_whole = 0  # decode solves handed in whole (batch_solve)
        self._thread: threading.Thread | None = None

    @contextmanager
    def solving(self):
        """A row's decode solve: while inside, a batch waits (up to gather_s) for this row's next step."""
        with self._cond:
            self._inside += 1
        self._solving.inside = True
        try:
            yield
        finally:
            self._solving.inside = False
            with self._cond:
                self._inside -= 1
                self._after_solve.add(threading.get_ident())
                self._cond.notify_all()

    @contextmanager
    def prompting(self):
        """A row's prompt solve: while inside, a prompt's iteration waits (up to prompt_wait_s) for this row's."""
        with self._cond:
            self._prompting += 1
        try:
            yield
        finally:
            with self._cond:
                self._prompting -= 1
                self._cond.notify_all()

    @contextmanager
    def member(self):
        """A stream's membership of the batch, from its start to its end (a closed stream leaves too)."""
        ident = threading.get_ident()
        with self._cond:
            self.rows += 1
        try:
            yield
        finally:
            with self._cond:
                self.rows -= 1
                self._decoding.discard(ident)
                self._after_solve.discard(ident)
                self._cond.notify_all()  # a call held for this row's runs without it

    def step(self, z, inj, past_k, past_v) -> list[np.ndarray] | None:
        """An EqLM row's step of one new position ([1, 1, D]), run in the next batch; (z_next, k, v, residual). None
        when the row is the only one decoding: it runs its step itself, as it would alone (no hand-over)."""
        return self._hand_in("step", (z, inj, past_k, past_v), self._inside <= 1)

    def prompt_step(self, z, inj, past_k, past_v) -> list[np.ndarray] | None:
        """A prompt's iteration ([1, T, D]) or, an explicit transformer's, its pass through every layer (inj None;
        past_k and past_v [layers, 1, H, P, Dh]), run with the other prompts of the same past length; None when no
        other prompt is being solved (the row runs it itself, whatever else the scheduler has to run). A row batches
        its prompt only inside `prompting`."""
        if self._prompting <= 1:  # read without the lock: at worst a prompt just joined runs one iteration alone
            return None
        return self._hand_in("prompt", (z, inj, past_k, past_v), alone=False)

    def prompt_call(self, z, inj, past_k, past_v, lengths: list[int]) -> list[np.ndarray]:
        """One prompt iteration (or explicit pass) of rows right-padded from `lengths` positions: an EqLM's fp32 step
        graph, or `prompt_session`: the per-row form of its int8 step, which quantises each row's positions as the
        lone step quantises its call, or an explicit transformer's chained layers (int8: in that per-row form)."""
        if self.prompt_session is None:
            return self._model.step(z, inj, past_k, past_v)
        session, names = self.prompt_session
        feed = {"z": z, "inj": inj, "past_k": past_k, "past_v": past_v, PROMPT_VALID: prefix_mask(lengths, z.shape[1])}
        if inj is None:  # an explicit transformer's layers: (z_next, k [layers, B, H, T, Dh], v)
            feed |= past_inputs(past_k, past_v)
        out = session.run(None, {name: feed[name] for name in names})
        return out if inj is not None else stacked_outputs(out)

    def layers_pass(self, z, cache: DecodeCache) -> np.ndarray | None:
        """An explicit transformer's pass of one new position ([1, 1, D], its embedding) through every layer, run
        with the other rows' passes: each layer's K/V go into `cache` at its position; the last layer's output, or
        None when the row is the only member (it runs its layers itself, as alone)."""
        out = self._hand_in("pass", (z, cache), self.rows <= 1)  # the members' passes follow within member_wait_s
        return None if out is None else out[0]

    def solve_pass(self, z, inj, cache: DecodeCache, depth: int, tol: float | None, settle: bool):
        """An EqLM row's Picard solve of one new position ([1, 1, D]) from z, iterated with the other rows' solves
        (batch_solve): (z, iterations, residual), each iteration's K/V in `cache` unless `settle`; None when the
        row is the only member (it runs its solve itself, as alone)."""
        return self._hand_in("solve", (z, inj, cache, depth, tol, settle), self.rows <= 1)

    def head(self, z) -> np.ndarray | None:
        """One row's logits [1, 1, V] of one position, run in the next batch with the other rows' (the head reads
        the tied matrix once for them all); None when the row is the only member (it runs its head itself)."""
        waits = not getattr(self._solving, "inside", False)  # the next token's, not KL halting's inside a solve
        if waits:
            with self._cond:
                self._decoding.add(threading.get_ident())
                self._after_solve.discard(threading.get_ident())
        out = self._hand_in("head", (z,), self.rows <= 1, waits=waits)
        return None if out is None else out[0]

    def _hand_in(self, kind: str, inputs: tuple, alone: bool, waits: bool = False) -> list[np.ndarray] | None:
        """`alone` is read without the lock: at worst a row that just stopped being alone runs one step itself."""
        if alone and not self._pending:
            return None
        call = _Call(kind, *inputs, waits=waits)
        with self._cond:
            self._start()
            self._pending.append(call)
            self._cond.notify_all()
        call.done.wait()
        if call.error is not None:
            raise call.error
        return call.outputs

    def _start(self) -> None:  # under the lock
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="eqlm-batch", daemon=True)
            self._thread.start()

    def _take(self) -> list[_Call] | None:
        """The next batch; None (the thread ends, the next step starts another) after IDLE_S with nothing to run.

        A batch holds every pending step and every head call asked inside a solve (KL halting), once each row
        inside a solve has handed in its call or gather_s has passed. A next-token head call waits for the rows
        still inside their solves or out of them but yet to ask (a busy machine may keep a row waiting for a core),
        up to head_wait_s, and for the other decoding members' heads up to member_wait_s: the rows' heads then run
        together, and the rows start their next solves together, so their steps share each batch. An explicit
        transformer's pass waits up to member_wait_s for the members that have handed in no call."""
        with self._cond:
            while True:
                while not self._pending:
                    if self._solves:  # the solves in progress run their next iteration
                        return []
                    if not self._cond.wait(IDLE_S) and not self._pending:
                        self._thread = None
                        return None
                deadline = time.monotonic() + self.gather_s
                while sum(not call.waits and call.kind != "prompt" for call in self._pending) < min(
                    self._inside - len(self._solves), self.max_rows
                ):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(left)
                now = time.monotonic()
                ready = [call for call in self._pending if not self._held(call, now)][: self.max_rows]
                if ready or self._solves:
                    break
                # only held calls: wait for another row's call, or for the first held call's time to run out
                self._cond.wait(max(0.0, min(self._release(call, now) for call in self._pending) - now))
            taken = {id(call) for call in ready}
            self._pending = [call for call in self._pending if id(call) not in taken]
            return ready

    def _held(self, call: _Call, now: float) -> bool:  # under the lock
        """A next-token head call waiting for the rows still inside their solves or just out of them (up to
        head_wait_s) and for the other decoding members' heads (up to member_wait_s), or a pass waiting for the
        members that have handed in no call yet (up to member_wait_s), or a prompt's iteration waiting for the
        other prompts being solved (up to prompt_wait_s)."""
        if call.kind == "prompt":
            waiting = sum(c.kind == "prompt" for c in self._pending)
            return now < call.since + self.prompt_wait_s and waiting < min(self._prompting, self.max_rows)
        if call.kind == "pass":
            return now < call.since + self.member_wait_s and sum(c.kind != "step" for c in self._pending) < self.rows
        if call.kind == "solve":  # waits for the members yet to begin theirs, unless solves are under way
            return not self._solves and now < call.since + self.member_wait_s and len(self._pending) < self.rows
        if not call.waits:
            return False
        if now < call.since + self.head_wait_s and (self._inside > 0 or self._after_solve):
            return True
        return now < call.since + self.member_wait_s and sum(c.waits for c in self._pending) < len(self._decoding)

    def _release(self, call: _Call, now: float) -> float:
        """The next time a held call's wait runs out."""
        ends = (
            call.since + self.member_wait_s,
            call.since + (self.head_wait_s if call.kind == "head" else 0.0),
            call.since + (self.prompt_wait_s if call.kind == "prompt" else 0.0),
        )
        return min((end for end in ends if end > now), default=now)

    def _loop(self) -> None:
        while (batch := self._take()) is not None:
            for kind, run in (("step", self.run), ("pass", self.run_passes), ("head", self.run_heads)):
                group = [call for call in batch if call.kind == kind]
                if group:
                    self._deliver(group, run)
            # one call per past length (an EqLM's iterations share one graph: prompts at different iterations run
            # together)
            prompts: dict[int, list[_Call]] = {}
            for call in batch:
                if call.kind == "prompt":
                    prompts.setdefault(call.inputs[2].shape[-2], []).append(call)
            for group in prompts.values():
                self._deliver(group, self.run_prompts)
            begun = [Solve(call, *call.inputs) for call in batch if call.kind == "solve"]
            self._solves, self.solves_whole = self._solves + begun, self.solves_whole + len(begun)
            if self._solves:
                self._solves = iterate(self, self._solves)

    @staticmethod
    def _deliver(group: list[_Call], run) -> None:
        try:
            outputs = run(group)
        except Exception as error:  # noqa: BLE001 - every row of the group sees it; the thread goes on
            for call in group:
                call.error = error
                call.done.set()
            return
        for call, out in zip(group, outputs, strict=True):
            call.outputs = out
            call.done.set()

    def run_heads(self, batch: list[_Call]) -> list[list[np.ndarray]]:
        """The rows' head calls ([1, 1, D] each) in one head call."""
        logits = self._model.head(np.concatenate([call.inputs[0] for call in batch]))
        self.head_batches += 1
        self.largest_head = max(self.largest_head, len(batch))
        return [[logits[i : i + 1]] for i in range(len(batch))]

    def run_prompts(self, batch: list[_Call]) -> list[list[np.ndarray]]:
        """Prompt iterations (or explicit passes) at one past length in one call (`prompt_call`): each row's new
        positions right-padded to the longest with copies of its last one (causal attention: the real positions never
        see them); each row's outputs cut back to its own positions."""
        lengths = [call.inputs[0].shape[1] for call in batch]
        longest = max(lengths)

        def padded(x: np.ndarray) -> np.ndarray:
            return np.pad(x, ((0, 0), (0, longest - x.shape[1]), (0, 0)), mode="edge")

        def joined(i: int) -> np.ndarray | None:  # z, inj [1, T, D]; past K/V [(layers,) 1, H, P, Dh]
            if batch[0].inputs[i] is None:
                return None
            rows = [padded(call.inputs[i]) if i < 2 else call.inputs[i] for call in batch]
            return np.concatenate(rows, axis=-4 if i >= 2 else 0).astype(np.float32, copy=False)

        outputs = self.prompt_call(*(joined(i) for i in range(4)), lengths)
        if len(batch) > 1:
            self.prompt_batches += 1
            self.largest_prompt = max(self.largest_prompt, len(batch))
        # z and residual [B, T(, D)]; K/V [(layers,) B, H, T, Dh]
        return [
            [x[..., i : i + 1, :, :t, :] if x.ndim >= 4 else x[i : i + 1, :t] for x in outputs]
            for i, t in enumerate(lengths)
        ]

    def run_passes(self, batch: list[_Call]) -> list[list[np.ndarray]]:
        """The rows' passes through every layer in one call of the chained batched layers (eqlm/chained.py), as `run`
        would run each layer's steps: the rows' pasts kept batch-major between calls (batch_pasts), masked; each
        layer's K/V written into each row's cache."""
        caches: list[DecodeCache] = [call.inputs[1] for call in batch]
        order = self._pasts.take(caches)  # the rows in the buffer's order
        z = np.concatenate([batch[i].inputs[0] for i in order]).astype(np.float32, copy=False)
        z, k, v = stacked_outputs(self.sessions[0].run(None, {"z": z, **self._pasts.feed()}))  # K/V [L, B, H, 1, Dh]
        self._pasts.put(k, v)
        outputs: list = [None] * len(batch)
        for row, i in enumerate(order):
            caches[i].put(slice(None), k[:, row : row + 1], v[:, row : row + 1])
            outputs[i] = [z[row : row + 1]]
        self.batches += 1
        self.rows_run += len(batch)
        self.largest = max(self.largest, len(batch))
        return outputs

    def run(self, batch: list[_Call]) -> list[list[np.ndarray]]:
        """The rows' steps in one step_batched call: each row's past right-padded to the longest, masked."""
        b = len(batch)
        pasts = [(call.inputs[2][0], call.inputs[3][0]) for call in batch]
        z, k, v, residual = run_steps(self, [c.inputs[0] for c in batch], [c.inputs[1] for c in batch], pasts)
        return [[z[i : i + 1], k[i : i + 1], v[i : i + 1], residual[i : i + 1]] for i in range(b)]
