"""An explicit transformer's layer graphs chained into one onnxruntime graph, built in memory when a runtime loads
(never torch, nothing written): one call runs a position's whole pass through the layers.

A runtime that calls each layer's graph in turn pays, at every layer, onnxruntime's per-call cost and the wake-up of
its thread pool; the 124M explicit model's int8 layers, 7.1 MB each, spend longer on that than on their products.
The chained graph is the layer graphs themselves, joined by name (layer i's next state is layer i+1's `z`): the same
nodes and the same weights, read from the same files (external data stays external, resolved in the export's
folder), so a pass gives what the layers give one call at a time, bit for bit. The layers' residual outputs, which
an explicit transformer does not report, are left out with the nodes that only they need.

Inputs: `z` [B, T, D] and each layer's `past_k_NN`, `past_v_NN` [B, H, P, Dh]; outputs: `z_next` (the last layer's
state) and each layer's `k_NN`, `v_NN` (the K/V of the new positions, as layer NN's graph returns them).

The batched layers (`layer_NN_batched`, export_batched.py) chain the same way: their `past_valid` [B, P], the rows'
mask of their own past positions, is one input that every layer reads (each row's past has the same length at every
layer), so a batch's pass through every layer is one call too (eqlm.batch_decode).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort

Z, PAST_K, PAST_V = "z", "past_k", "past_v"  # a layer graph's inputs (export_explicit.py)
SHARED = {"past_valid"}  # an input that a batched layer graph takes and every layer of the chain reads as it is
EXTERNAL_FOLDER = "session.model_external_initializers_file_folder_path"


def chained_graph(onnx_dir: Path, names: list[str]) -> bytes:
    """The serialised graph that runs the layer graphs `names` (files in onnx_dir, in slot order) one after
    another."""
    return chained_model(onnx_dir, names).SerializeToString()


def chained_model(onnx_dir: Path, names: list[str]):
    """chained_graph's onnx.ModelProto, its weights left in their external-data files."""
    import onnx
    from onnx import helper

    nodes, initializers, inputs, outputs = [], [], [], []
    opsets: dict[str, int] = {}
    state, shared = Z, None
    for i, name in enumerate(names):
        layer = onnx.load(str(Path(onnx_dir) / name), load_external_data=False)
        graph = layer.graph
        for opset in layer.opset_import:
            opsets[opset.domain] = max(opsets.get(opset.domain, 0), opset.version)
        given = [value.name for value in graph.input]
        if sorted(set(given) - SHARED) != sorted([Z, PAST_K, PAST_V]):
            raise ValueError(f"{name} takes {given}, not an explicit transformer layer's {[Z, PAST_K, PAST_V]}")
        if shared is None:
            shared = SHARED & set(given)
        elif SHARED & set(given) != shared:
            raise ValueError(f"{name} takes {given}, where the layer before it takes {sorted(shared)} too")
        next_z, k, v = (value.name for value in graph.output[:3])
        renamed = {Z: state, PAST_K: f"{PAST_K}_{i:02d}", PAST_V: f"{PAST_V}_{i:02d}"}
        renamed |= {k: f"k_{i:02d}", v: f"v_{i:02d}"} | {value: value for value in shared}
        last = i == len(names) - 1
        if last:
            renamed[next_z] = "z_next"

        def rename(value: str, i=i, renamed=renamed) -> str:
            return renamed.get(value, f"l{i:02d}/{value}" if value else value)

        for value in graph.input:
            if i == 0 or value.name not in {Z, *shared}:
                inputs.append(_renamed_value(value, rename(value.name)))
        for tensor in graph.initializer:
            copy = onnx.TensorProto()
            copy.CopyFrom(tensor)
            copy.name = rename(tensor.name)
            initializers.append(copy)
        for j, node in enumerate(graph.node):
            copy = onnx.NodeProto()
            copy.CopyFrom(node)
            copy.name = f"l{i:02d}/{node.name or f'#{j}'}"
            copy.ClearField("input")
            copy.input.extend(rename(value) for value in node.input)
            copy.ClearField("output")
            copy.output.extend(rename(value) for value in node.output)
            nodes.append(copy)
        outputs += [_renamed_value(graph.output[1], f"k_{i:02d}"), _renamed_value(graph.output[2], f"v_{i:02d}")]
        if last:
            outputs.insert(0, _renamed_value(graph.output[0], "z_next"))
        state = rename(next_z)
    nodes = _needed(nodes, {value.name for value in outputs})
    used = {value for node in nodes for value in node.input}
    graph = helper.make_graph(nodes, "chained_layers", inputs, outputs, [t for t in initializers if t.name in used])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in sorted(opsets.items())])
    model.ir_version = layer.ir_version
    return model


def past_inputs(past_k, past_v) -> dict[str, np.ndarray]:
    """A chained call's past inputs from each layer's K and V (in slot order): `past_k_NN` and `past_v_NN`."""
    return {f"{name}_{i:02d}": x for name, xs in ((PAST_K, past_k), (PAST_V, past_v)) for i, x in enumerate(xs)}


def stacked_outputs(out: list[np.ndarray]) -> list[np.ndarray]:
    """A chained call's outputs as [z_next, k, v], each layer's K and V stacked: [layers, B, H, T, Dh]."""
    return [out[0], np.stack(out[1::2]), np.stack(out[2::2])]


def chained_session(onnx_dir: Path, names: list[str], options: ort.SessionOptions) -> ort.InferenceSession:
    """An onnxruntime session of chained_graph, its external data read from onnx_dir."""
    options.add_session_config_entry(EXTERNAL_FOLDER, str(Path(onnx_dir).resolve()))
    return ort.InferenceSession(chained_graph(onnx_dir, names), options, providers=["CPUExecutionProvider"])


def _renamed_value(value, name: str):
    import onnx

    copy = onnx.ValueInfoProto()
    copy.CopyFrom(value)
    copy.name = name
    return copy


def _needed(nodes: list, wanted: set[str]) -> list:
    """The nodes that the values `wanted` depend on, in their order."""
    kept, wanted = [], set(wanted)
    for node in reversed(nodes):
        if wanted & set(node.output):
            kept.append(node)
            wanted |= set(node.input)
    return kept[::-1]
