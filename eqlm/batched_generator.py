"""A generator whose concurrent streams share the model's batched calls (eqlm.batch_decode's scheduler).

`BatchedModel` wraps a model so that its decoded steps, explicit passes, head calls and prompt iterations go through
the model's `BatchScheduler`; `BatchedGenerator` is `generation.Generator` over such a model, each stream a
member of the batch from its start to its end.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import onnxruntime as ort

from .batch_decode import MAX_ROWS, PROMPT_VALID, BatchScheduler
from .decoder import DecodeCache, OnnxEqLM, session_options
from .generation import GenerationRequest, Generator, TokenStream
from .manifest import precision_graphs
from .quantize import per_row_activations


class BatchedModel:
    """An OnnxEqLM whose steps of one new position go through the scheduler; everything else is the model's."""

    def __init__(self, model: OnnxEqLM, scheduler: BatchScheduler):
        self._model, self.scheduler = model, scheduler

    def __getattr__(self, name: str):
        return getattr(self._model, name)

    def step(self, z, inj, past_k, past_v, slot: int | None = None):
        """An EqLM's decoded step goes through the batch; an explicit transformer's decoded positions are batched
        whole (`layers_pass`); an fp32 prompt's iteration is batched with the other prompts' (`prompt_step`)."""
        if z.shape[1] > 1:  # batched only inside `solving` of an fp32 prompt
            out = self.scheduler.prompt_step(z, inj, past_k, past_v, slot)
        elif z.shape[:2] == (1, 1) and not self._model.explicit:
            out = self.scheduler.step(z, inj, past_k, past_v)
        else:
            out = None
        return self._model.step(z, inj, past_k, past_v, slot) if out is None else out

    def layers_pass(self, z: np.ndarray, cache: DecodeCache) -> np.ndarray | None:
        """An explicit transformer's pass of one decoded position through its layers, batched (decoder.process)."""
        return self.scheduler.layers_pass(z, cache)

    def solve_pass(self, z, inj, cache: DecodeCache, depth: int, tol: float | None, settle: bool):
        """An EqLM's decoded position solved whole in the batch (batch_solve; decoder.process)."""
        return self.scheduler.solve_pass(z, inj, cache, depth, tol, settle)

    def head(self, z: np.ndarray) -> np.ndarray:
        out = self.scheduler.head(z) if z.shape[:2] == (1, 1) else None
        return self._model.head(z) if out is None else out

    @property
    def batches_prompts(self) -> bool:
        """Whether a prompt's iterations batch with the other prompts' (fp32, and an EqLM's int8 in its per-row step;
        an explicit transformer's int8 prompt runs alone)."""
        return self._model.precision == "fp32" or self.scheduler.prompt_session is not None

    def solving(self, new_positions: int):
        """A solve of `new_positions`: a decoded one (1) is a batch member while it runs; a prompt's
        iterations batch with the other prompts being solved."""
        if new_positions == 1:
            return self.scheduler.solving()
        return self.scheduler.prompting() if self.batches_prompts else nullcontext()


def batched_graphs(manifest: dict, precision: str = "fp32") -> tuple[str, ...] | None:
    """The batched graphs of `precision`, when exported: ("step_batched",) (int8: "step_batched_int8"), or an explicit
    transformer's batched layers in slot order; None when the export has none.

    A batched int8 graph quantises its activations with a scale per row (eqlm.quantize.per_row_activations), so a
    row's products are the same beside others as alone. An int8 export made before those graphs has none: its one
    activation scale per call would make a batched row depend on the others, so its int8 requests decode alone."""
    graphs = manifest.get("graphs") or {}
    suffix = "_int8" if precision == "int8" else ""
    if manifest.get("layers"):  # an explicit transformer: one batched graph a layer, or none
        layers = tuple(f"{role}{suffix}" for role in manifest.get("batched_layers") or ())
        complete = len(layers) == len(manifest["layers"]) and all(role in graphs for role in layers)
        return layers if complete else None
    return (f"step_batched{suffix}",) if f"step_batched{suffix}" in graphs else None


class BatchedGenerator(Generator):
    """Generator whose concurrent streams share each iteration's graph call; its API is Generator's. `options` are
    Generator's; a precision without its own batched graph decodes each request alone (never in another precision)."""

    def __init__(self, onnx_dir: Path, max_rows: int = MAX_ROWS, **options):
        super().__init__(onnx_dir, **options)
        precision = options.get("precision") or ("int8" if options.get("int8") else "fp32")
        graphs = batched_graphs(self.manifest, precision)
        self.scheduler: BatchScheduler | None = None
        if graphs is not None:
            threads = int(options.get("threads", 1))
            prompts = per_row_prompt_session(self.model, threads) if precision == "int8" else None
            self.scheduler = BatchScheduler(
                self.model, threads=threads, max_rows=max_rows, graphs=graphs, prompt_session=prompts
            )
            self.model = BatchedModel(self.model, self.scheduler)
            if self.model.explicit and self.model.batches_prompts:  # its prompts run one layer a call: load them
                self.model.load_layers()  # now, not in the first prompt's request

    def _member(self, events: Iterator) -> Iterator:
        with self.scheduler.member():
            yield from events

    def stream(self, request: GenerationRequest) -> TokenStream:
        stream = super().stream(request)
        if self.scheduler is None:
            return stream
        return TokenStream(self._member(stream._events), stream.stats)


def per_row_prompt_session(model: OnnxEqLM, threads: int) -> tuple[ort.InferenceSession, list[str]] | None:
    """(session, input names) of an EqLM's int8 step in its per-row prompt form, built in memory (its 8-bit weights
    held once more): each row's activations quantised over its own positions (`PROMPT_VALID`), as the lone step
    quantises its call, where the lone step's one scale a call would tie the rows together; None for an explicit
    transformer, whose int8 prompts run alone."""
    import onnx

    if model.explicit:
        return None
    step = onnx.load(str(Path(model.onnx_dir) / precision_graphs(model.manifest, "int8")["step"]))
    graph = per_row_activations(step, mask=PROMPT_VALID).SerializeToString()
    session = ort.InferenceSession(graph, session_options(threads), providers=["CPUExecutionProvider"])
    return session, [i.name for i in session.get_inputs()]
