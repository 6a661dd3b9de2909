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
    model). A weight that anything else reads (another operator, or a product in `skip`) is left as it is."""
    from onnx import helper, numpy_helper

    readers: dict[str, list[tuple[object, int]]] = {}
    for node in model.graph.node:
        for slot, name in enumerate(node.input):
            readers.setdefault(name, []).append((node, slot))
    widths = {
        t.name: int(t.dims[1])
        for t in model.graph.initializer
        if len(t.dims) == 2
        and t.dims[1] % WIDTH_MULTIPLE
        and readers.get(t.name)
        and all(n.op_type == "MatMul" and slot == 1 and n.name not in skip for n, slot in readers[t.name])
    }
    for weight in model.graph.initializer:
        if weight.name in widths:
            values = numpy_helper.to_array(weight)
            wide = np.zeros((values.shape[0], padded_width(widths[weight.name])), dtype=values.dtype)
            wide[:, : widths[weight.name]] = values
            weight.CopyFrom(numpy_helper.from_array(wide, weight.name))
    out = []
    for node in model.graph.node:
        if node.op_type != "MatMul" or node.input[1] not in widths:
            out.append(node)
            continue
        wide_out, real = f"{node.output[0]}_padded", f"{node.input[1]}_real_width"
        out += [
            helper.make_node("MatMul", list(node.input), [wide_out], name=node.name),
            helper.make_node(
                "Slice",
                [wide_out, "width_pad_start", real, "width_pad_axis"],
                [node.output[0]],
                name=f"{node.name}_real",
            ),
        ]
    if widths:
        model.graph.initializer.extend(
            [
                numpy_helper.from_array(np.array([0], np.int64), "width_pad_start"),
                numpy_helper.from_array(np.array([-1], np.int64), "width_pad_axis"),
                *(numpy_helper.from_array(np.array([n], np.int64), f"{w}_real_width") for w, n in widths.items()),
            ]
        )
    model.graph.ClearField("node")
    model.graph.node.extend(out)
    return model
