"""The widths of the products that get 8-bit weights, padded to a multiple of 16 columns.

onnxruntime's 8-bit matrix products (MatMulInteger, and DynamicQuantizeMatMul, its fused form) give wrong integers
on Intel CPUs with AMX (onnxruntime 1.22) when a product has 32 rows or more and a width that is not a multiple of
16: some rows' last columns. Which columns depends on how the product's columns fall to the threads. Measured on such
a CPU over 1 to 16 threads: a width of 20 (explicit-demo's attention output) is wrong on one thread from 32 rows on,
the programme's 6,816 x 1,704 down-projection on 4 and 16 threads, and every width that is a multiple of 16 (48 to
50,272) is exact. A prompt, a window of positions or a batch of 32 tokens or more meets it.

So the int8 export multiplies by each weight padded with zero columns to the next multiple of 16 and keeps the
product's real columns (a Slice): each 8-bit weight column keeps its own scale and zero point, so the real columns'
numbers are those of the unpadded product wherever that one is right. The fp32 graphs are unchanged.
"""

from __future__ import annotations

import numpy as np

WIDTH_MULTIPLE = 16


def padded_width(width: int) -> int:
    """The next multiple of WIDTH_MULTIPLE at or above `width`."""
    return -(-width // WIDTH_MULTIPLE) * WIDTH_MULTIPLE


def pad_product_widths(model, skip: tuple[str, ...] | list[str] = ()):
    """Pad each MatMul by a [K, N] initializer (not named in `skip`) whose N is not a multiple of 16 to N rounded up,
    with zero columns, and slice its first N columns back under the product's output name (in place; returns the
    model). A weight shared by several products is padded once."""
    from onnx import helper, numpy_helper

    inits = {t.name: t for t in model.graph.initializer}
    padded: set[str] = set()
    out = []
    for node in model.graph.node:
        weight = inits.get(node.input[1]) if node.op_type == "MatMul" and len(node.input) > 1 else None
        if weight is None or node.name in skip or len(weight.dims) != 2 or weight.dims[1] % WIDTH_MULTIPLE == 0:
            if weight is not None and weight.name in padded:
                raise ValueError(f"{weight.name!r} is padded for one product and not for another")
            out.append(node)
            continue
        width = int(weight.dims[1]) if weight.name not in padded else _real_width(model, weight.name)
        if weight.name not in padded:
            values = numpy_helper.to_array(weight)
            wide = np.zeros((values.shape[0], padded_width(width)), dtype=values.dtype)
            wide[:, :width] = values
            weight.CopyFrom(numpy_helper.from_array(wide, weight.name))
            model.graph.initializer.append(
                numpy_helper.from_array(np.array([width], np.int64), f"{weight.name}_real_width")
            )
            padded.add(weight.name)
        wide_out = f"{node.output[0]}_padded"
        out.append(helper.make_node("MatMul", [node.input[0], weight.name], [wide_out], name=node.name))
        out.append(
            helper.make_node(
                "Slice",
                [wide_out, "width_pad_start", f"{weight.name}_real_width", "width_pad_axis"],
                [node.output[0]],
                name=f"{node.name}_real_columns",
            )
        )
    if padded:
        model.graph.initializer.extend(
            [
                numpy_helper.from_array(np.array([0], np.int64), "width_pad_start"),
                numpy_helper.from_array(np.array([-1], np.int64), "width_pad_axis"),
            ]
        )
    model.graph.ClearField("node")
    model.graph.node.extend(out)
    return model


def _real_width(model, weight_name: str) -> int:
    from onnx import numpy_helper

    tensor = next(t for t in model.graph.initializer if t.name == f"{weight_name}_real_width")
    return int(numpy_helper.to_array(tensor)[0])
