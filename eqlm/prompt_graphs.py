"""int8 prompt graphs whose rows share a call: the per-row form of a lone int8 iteration graph, masked to each row's
own positions (never torch).

A lone int8 graph (an EqLM's step, an explicit transformer's layer) quantises a call's activations on one scale. A
prompt batched with others is right-padded to the longest with copies of its last position, so its per-row scale
(eqlm.quantize.per_row_activations) would take in its padding, which attention makes unlike its real positions. Here
each quantiser's range is taken over the row's real positions alone: `prompt_valid` [B, T] (1 on a row's positions,
0 on its padding) zeroes the padding before the reductions, and a quantiser's range always holds zero, so the scale
and zero point are the lone call's, and each row's products are its lone graph's, bit for bit.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .quantize import per_row_activations

PROMPT_VALID = "prompt_valid"


def per_row_prompt_graph(path: Path) -> bytes:
    """The int8 iteration graph at `path` in its masked per-row form, its external weights read in, for a session
    built in memory; it takes `prompt_valid` [B, T] beside its own inputs."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(path))
    typed = onnx.shape_inference.infer_shapes(model)
    ranks = {v.name: len(v.type.tensor_type.shape.dim) for v in [*typed.graph.value_info, *typed.graph.input]}
    model = per_row_activations(model)
    mask = f"{PROMPT_VALID}_3d"
    nodes = [helper.make_node("Unsqueeze", [PROMPT_VALID, f"{PROMPT_VALID}_axis"], [mask])]
    masked: dict[str, str] = {}
    for node in model.graph.node:
        if node.op_type in ("ReduceMax", "ReduceMin") and node.output[0].endswith(("_row_max", "_row_min")):
            x = node.input[0]
            if ranks.get(x) != 3:
                raise ValueError(f"{x!r}, quantised for a product, is not [batch, positions, features]")
            if x not in masked:
                masked[x] = f"{x}_{PROMPT_VALID}"
                nodes.append(helper.make_node("Mul", [x, mask], [masked[x]]))
            node.input[0] = masked[x]
        nodes.append(node)
    model.graph.ClearField("node")
    model.graph.node.extend(nodes)
    model.graph.initializer.append(numpy_helper.from_array(np.array([2], np.int64), f"{PROMPT_VALID}_axis"))
    model.graph.input.append(helper.make_tensor_value_info(PROMPT_VALID, TensorProto.FLOAT, ["batch", "new"]))
    return model.SerializeToString()
