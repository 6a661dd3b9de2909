"""An int8 graph's products are exact wherever its rows fall: each 8-bit weight is padded to a multiple of 16 columns
(onnxruntime's 8-bit products give wrong integers on AMX CPUs at other widths from 32 rows on), its products keep
their real widths, and the numbers are those of exact integer arithmetic (onnx.reference) at 40 positions, on one
thread and on two."""

import shutil
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from eqlm.decoder import session_options
from eqlm.int8_widths import WIDTH_MULTIPLE, pad_product_widths, padded_width
from eqlm.quantize import _quantize_iteration, add_int8

ROOT = Path(__file__).resolve().parents[2]


def session(path: Path, threads: int) -> ort.InferenceSession:
    return ort.InferenceSession(str(path), session_options(threads), providers=["CPUExecutionProvider"])


def assert_exact(path: Path, feeds: dict) -> None:
    """onnxruntime's outputs of the graph at `path` are the reference evaluator's, on 1, 2 and 4 threads (up to the
    float rounding of the fused kernel's scales: a wrong integer moves an output by a whole step)."""
    expected = ReferenceEvaluator(str(path)).run(None, feeds)
    for threads in (1, 2, 4):
        for got, want in zip(session(path, threads).run(None, feeds), expected, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))


def product_graph(width: int, depth: int = 64) -> onnx.ModelProto:
    """x [batch, positions, depth] times W [depth, width] plus a bias."""
    rng = np.random.default_rng(width)
    weight = (rng.standard_normal((depth, width)) * 0.1).astype(np.float32)
    bias = rng.standard_normal(width).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["xw"], name="proj"), helper.make_node("Add", ["xw", "b"], ["y"])],
        "product",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "new", depth])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "new", width])],
        [numpy_helper.from_array(weight, "w"), numpy_helper.from_array(bias, "b")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_a_padded_width_is_the_next_multiple_of_16():
    assert [padded_width(n) for n in (1, 16, 20, 60, 1704, 50257)] == [16, 16, 32, 64, 1712, 50272]


def test_padding_a_product_keeps_its_output_and_leaves_16_wide_ones_alone():
    model = product_graph(20)
    x = np.random.default_rng(0).standard_normal((2, 5, 64)).astype(np.float32)
    before = ReferenceEvaluator(model).run(None, {"x": x})[0]
    pad_product_widths(model)
    assert [list(t.dims) for t in model.graph.initializer if t.name == "w"] == [[64, 32]]
    # the same products (numpy's fp32 matmul of another width may round an output's last bit otherwise)
    np.testing.assert_allclose(ReferenceEvaluator(model).run(None, {"x": x})[0], before, rtol=1e-6, atol=1e-6)
    untouched = product_graph(48)
    nodes = list(untouched.graph.node)
    assert list(pad_product_widths(untouched).graph.node) == nodes


def test_a_weight_that_something_else_reads_is_left_as_it_is():
    kept = product_graph(20)
    assert [list(t.dims) for t in pad_product_widths(kept, skip=["proj"]).graph.initializer] == [[64, 20], [20]]
    shared = product_graph(20)
    shared.graph.node.append(helper.make_node("Transpose", ["w"], ["w_t"]))
    assert [list(t.dims) for t in pad_product_widths(shared).graph.initializer] == [[64, 20], [20]]


@pytest.mark.parametrize("width, depth", [(20, 64), (60, 64), (100, 64), (1704, 6816)])
@pytest.mark.parametrize("per_row", [False, True], ids=["lone", "batched"])
def test_an_int8_product_over_40_positions_gives_the_exact_integer_products(tmp_path, width, depth, per_row):
    """1,704 from 6,816: the programme's 121M model's down-projection."""
    src, dst = tmp_path / "fp32.onnx", tmp_path / "int8.onnx"
    onnx.save(product_graph(width, depth), str(src))
    _quantize_iteration(src, dst, per_row=per_row)
    quantized = onnx.load(str(dst))
    inits = {t.name: list(t.dims) for t in quantized.graph.initializer}
    assert [inits[n.input[1]][1] for n in quantized.graph.node if n.op_type == "MatMulInteger"] == [padded_width(width)]
    x = np.random.default_rng(1).standard_normal((2 if per_row else 1, 40, depth)).astype(np.float32)
    assert_exact(dst, {"x": x})


def test_explicit_demos_int8_layer_over_a_40_position_window_gives_the_exact_integer_products(tmp_path):
    """explicit-demo is 20 wide (products of 60, 20, 100 and 20 columns)."""
    export = tmp_path / "onnx"
    shutil.copytree(ROOT / "models" / "explicit-demo" / "onnx", export)
    manifest = add_int8(export)
    widths = {}
    for role, name in manifest["graphs"].items():
        if role.endswith("_int8"):
            model = onnx.load(str(export / name))
            inits = {t.name: list(t.dims) for t in model.graph.initializer}
            widths[role] = [inits[n.input[1]][1] for n in model.graph.node if n.op_type == "MatMulInteger"]
    assert widths["layer_00_int8"] == [64, 32, 112, 32] and widths["head_int8"] == [256]
    assert all(w % WIDTH_MULTIPLE == 0 for role in widths for w in widths[role]), widths
    rng = np.random.default_rng(2)
    heads, head_dim = 4, 5
    feeds = {
        "z": rng.standard_normal((1, 40, 20)).astype(np.float32),
        "past_k": np.zeros((1, heads, 0, head_dim), np.float32),
        "past_v": np.zeros((1, heads, 0, head_dim), np.float32),
    }
    assert_exact(export / manifest["graphs"]["layer_00_int8"], feeds)
    assert_exact(export / manifest["graphs"]["head_int8"], {"z": feeds["z"]})
