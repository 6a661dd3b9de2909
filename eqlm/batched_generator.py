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
from .chained import chained_model
from .decoder import DecodeCache, OnnxEqLM, session_options
from .generation import GenerationRequest, Generator, TokenStream
from .manifest import layer_roles, precision_graphs
from .quantize import per_row_activations


class BatchedModel:
    """An OnnxEqLM whose steps of one new position go through the scheduler; everything else is the model's."""

    def __init__(self, model: OnnxEqLM, scheduler: BatchScheduler):
        self._model, self.scheduler = model, scheduler

    def __getattr__(self, name: str):
        return getattr(self._model, name)

    def step(self, z, inj, past_k, past_v, slot: int | None = None):
        """An EqLM's decoded step goes through the batch, and its prompt's iteration is batched with the other
        prompts' (`prompt_step`, inside `solving`); an explicit transformer's positions are batched whole
        (`layers_pass`, `prompt_pass`), its layers one at a time (a solve that records its steps) run alone."""
        out = None
        if not self._model.explicit and z.shape[1] > 1:
            out = self.scheduler.prompt_step(z, inj, past_k, past_v)
        elif not self._model.explicit and z.shape[:2] == (1, 1):
            out = self.scheduler.step(z, inj, past_k, past_v)
        return self._model.step(z, inj, past_k, past_v, slot) if out is None else out

    def layers_pass(self, z: np.ndarray, cache: DecodeCache) -> np.ndarray | None:
        """An explicit transformer's pass of one decoded position through its layers, batched (decoder.process)."""
        return self.scheduler.layers_pass(z, cache)

    def prompt_pass(self, z: np.ndarray, cache: DecodeCache) -> np.ndarray | None:
        """An explicit transformer's prompt [1, T, D] through its layers with the other prompts (decoder.process),
        each layer's K/V written into `cache`: the last layer's output, or None when it is the only prompt (it runs
        its chained pass)."""
        past = (x[:, :, :, : cache.length] for x in (cache.k, cache.v))
        out = self.scheduler.prompt_step(z, None, *past) if self.batches_prompts else None
        if out is None:
            return None
        cache.put(slice(None), out[1], out[2])  # [layers, 1, H, T, Dh]
        return out[0]

    def solve_pass(self, z, inj, cache: DecodeCache, depth: int, tol: float | None, settle: bool):
        """An EqLM's decoded position solved whole in the batch (batch_solve; decoder.process)."""
        return self.scheduler.solve_pass(z, inj, cache, depth, tol, settle)

    def head(self, z: np.ndarray) -> np.ndarray:
        out = self.scheduler.head(z) if z.shape[:2] == (1, 1) else None
        return self._model.head(z) if out is None else out

    @property
    def batches_prompts(self) -> bool:
        """Whether a prompt's iterations batch with the other prompts' (fp32, and int8 in a per-row form of its
        graphs)."""
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
            prompts = prompt_session(self.model, threads)
            self.scheduler = BatchScheduler(
                self.model, threads=threads, max_rows=max_rows, graphs=graphs, prompt_session=prompts
            )
            self.model = BatchedModel(self.model, self.scheduler)

    def _member(self, events: Iterator) -> Iterator:
        with self.scheduler.member():
            yield from events

    def stream(self, request: GenerationRequest) -> TokenStream:
        stream = super().stream(request)
        if self.scheduler is None:
            return stream
        return TokenStream(self._member(stream._events), stream.stats)


def per_row_prompt_session(model: OnnxEqLM, threads: int) -> tuple[ort.InferenceSession, list[str]] | None:
    """(session, input names) of the graph that runs a batch of int8 prompts, built in memory (its 8-bit weights held
    once more): an EqLM's int8 step, or an explicit transformer's int8 layers chained (eqlm/chained.py), in their
    per-row form: each row's activations quantised over its own positions (`PROMPT_VALID`), as the lone graph
    quantises its call, where the lone graph's one scale a call would tie the rows together."""
    import onnx

    graphs = precision_graphs(model.manifest, "int8")
    if model.explicit:
        layers = [graphs[role] for role in layer_roles(model.manifest)]
        graph = chained_model(model.onnx_dir, layers)
        onnx.external_data_helper.load_external_data_for_model(graph, str(model.onnx_dir))
        options = model.chain_options(layers, threads)
    else:
        graph, options = onnx.load(str(Path(model.onnx_dir) / graphs["step"])), session_options(threads)
    graph = per_row_activations(graph, mask=PROMPT_VALID).SerializeToString()
    session = ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
    return session, [i.name for i in session.get_inputs()]


def prompt_session(model: OnnxEqLM, threads: int) -> tuple[ort.InferenceSession, list[str]] | None:
    """The graph that runs a batch of prompts where it is not the model's own step: int8's per-row form
    (per_row_prompt_session), or an explicit transformer's fp32 chained layers; None for an EqLM's fp32 step."""
    if model.precision == "int8":
        return per_row_prompt_session(model, threads)
    if model.explicit:
        return model.chain_session, [i.name for i in model.chain_session.get_inputs()]
    return None
