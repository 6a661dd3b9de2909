"""int8 weights for a whole ONNX export (the fp32 graphs stay; the int8 ones are listed beside them as `<role>_int8`).

The precision is called int8 (8-bit weights and activations); its weights are stored as uint8 with a scale and a zero
point per output channel (WEIGHT_TYPE_NAME: why unsigned).

- Every iteration graph (`step`, or an explicit transformer's `layer_NN`, and the batched one of each):
  onnxruntime's dynamic quantisation (`quantize_dynamic`), 8-bit weights with a scale and zero point per output
  channel (a product fed by a Concat, or a one-column gate, stays fp32: `kept_in_fp32`). A lone graph and its
  batched one store their 8-bit weights once (`step.int8.bin`, `layer_NN.int8.bin`), as their fp32 ones do.
- A batched graph's activations are quantised per row (`per_row_activations`: quantize_dynamic's per-call scale,
  taken over each row alone), which for one row is the per-call scale of the lone graph, so a row's products are the
  same, bit for bit, alone or in a batch, and int8 requests batch as fp32 ones do. The head's are too, as the batch
  runs the rows' heads in one call.
- The tied matrix (the token embedding, which is also the head) is quantised once, by the same tool on the head's
  MatMul: 8-bit [D, V] with a scale and zero point per vocabulary entry. Where the fp32 export stores its tied
  matrix once (a programme model's `tied.bin`), the 8-bit one is stored once too, as `tied.int8.bin`, which both
  int8 graphs read as external data; a portal model's graphs stay self-contained (its byte vocabulary makes the
  matrix small). The head multiplies by it (MatMulInteger on each position's 8-bit activations); the embedding
  gathers its columns (Gather on axis 1, then Transpose), subtracts each entry's zero point and multiplies by its
  scale.
- Each 8-bit weight, the tied one too, is padded with zero columns to a multiple of 16 and its product sliced back
  (`int8_widths`: onnxruntime's 8-bit products are wrong on AMX CPUs at other widths from 32 rows on).

`add_int8(out_dir)` writes the int8 graphs of an export and adds them to its manifest.json (`graphs`, `graph_sha256`,
`external_data`, `precisions`). Needs onnx and onnxruntime; never torch.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np

from .int8_widths import pad_product_widths, padded_width
from .onnx_share import sha256, share_weights

TIED_INT8_FILE = "tied.int8.bin"
# uint8 weights with a zero point per output channel, against uint8 activations: onnxruntime's x86 kernels for uint8
# x int8 (VPMADDUBSW, on CPUs without VNNI) saturate their int16 pair sums, so a signed-weight graph gives other
# numbers there than exact integer arithmetic (onnx.reference, the browser's WebAssembly); uint8 x uint8 is exact on
# every CPU, so the server and the browser compute the same products.
WEIGHT_TYPE_NAME = "QUInt8"
INT8_ABOVE_PARAMS = 10_000_000  # an imported model this large gets its int8 graphs beside the fp32 ones unasked


# embed and head are quantised by their tied matrix; every other graph is an iteration graph, lone or batched
def is_iteration_role(role: str) -> bool:
    """A graph that gets an int8 twin of its own: step, step_batched, layer_NN or layer_NN_batched (not embed or head,
    which are quantised by their tied matrix)."""
    return role not in ("embed", "head")


def weight_type():
    """onnxruntime.quantization's QuantType of the weights (WEIGHT_TYPE_NAME)."""
    from onnxruntime.quantization import QuantType

    return getattr(QuantType, WEIGHT_TYPE_NAME)


def int8_weights_file(role: str) -> str:
    """step -> step.int8.bin: the 8-bit weights that an iteration graph's int8 twin and its batched one share."""
    return f"{role}.int8.bin"


def int8_name(name: str) -> str:
    """step.onnx -> step.int8.onnx"""
    return name[: -len(".onnx")] + ".int8.onnx" if name.endswith(".onnx") else name + ".int8"


def kept_in_fp32(model) -> list[str]:
    """The weight products an iteration graph keeps in fp32: one fed by a Concat (its activations join tensors of
    different scales, which one per-call activation scale quantises badly: eqlm-demo's adapter over [z, inj] alone
    moved a next-token log-probability by 8 nats) and a gate with one output column (its bytes are nothing)."""
    inits = {t.name: list(t.dims) for t in model.graph.initializer}
    producer = {out: node.op_type for node in model.graph.node for out in node.output}
    return [
        node.name
        for node in model.graph.node
        if node.op_type == "MatMul"
        and node.input[1] in inits
        and (producer.get(node.input[0]) == "Concat" or inits[node.input[1]][-1] == 1)
    ]


def per_row_activations(model, mask: str | None = None):
    """Quantise each product's activations per row of the batch instead of per call (in place; returns the model).

    quantize_dynamic's DynamicQuantizeLinear takes one scale and zero point for its whole input, so in a batched graph
    one row's products would depend on the other rows. Here each DynamicQuantizeLinear becomes the same formula over
    every axis but the first (the batch's): a scale and zero point per row, which for one row is the per-call one it
    replaces (the lone graphs keep the per-call form, which onnxruntime fuses). Its MatMulInteger gets no activation
    zero point (onnxruntime's takes one for the whole input) and subtracts the row's zero point times the weight's
    column sums instead, in exact int32. A row's products are then the same, bit for bit, alone or beside others.

    A scale per position would be finer still (the max over tokens on the reference checkpoints fell from 0.053 to
    0.040 nats), but it made the browser's int8 greedy tokens part from the server's on eqlm-demo at depth 16 for 5
    of 10 prompts (10 of 10 agree with a scale per row): a prompt's positions on their own grids flip more 8-bit
    roundings on the fp32 differences between WebAssembly and x86 kernels.

    `mask` (prompts of several rows in one call, right-padded with copies of their last position): the name of a new
    input [B, T], 1 on a row's positions and 0 on its padding, which attention makes unlike its real positions. Each
    quantiser's range is then taken over the row's real positions (the padding zeroed; a range always holds zero),
    which is the lone call's over that prompt."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 17)
    typed = onnx.shape_inference.infer_shapes(model)
    ranks = {
        v.name: len(v.type.tensor_type.shape.dim)
        for v in [*typed.graph.value_info, *typed.graph.input, *typed.graph.output]
        if v.type.tensor_type.HasField("shape")
    }
    inits = {t.name: t for t in model.graph.initializer}
    nodes = list(model.graph.node)
    quantisers = {n.output[0]: n for n in nodes if n.op_type == "DynamicQuantizeLinear"}
    consts = [
        numpy_helper.from_array(np.array(0.0, np.float32), "per_row_zero"),
        numpy_helper.from_array(np.array(255.0, np.float32), "per_row_qmax"),
        numpy_helper.from_array(np.array(np.finfo(np.float32).tiny, np.float32), "per_row_tiny"),
    ]
    out = []
    if mask:  # [B, T] -> [B, T, 1], against [batch, positions, features] activations
        consts.append(numpy_helper.from_array(np.array([2], np.int64), f"{mask}_axis"))
        out.append(helper.make_node("Unsqueeze", [mask, f"{mask}_axis"], [f"{mask}_3d"]))
        model.graph.input.append(helper.make_tensor_value_info(mask, TensorProto.FLOAT, ["batch", "new"]))
    for node in nodes:
        if node.op_type == "DynamicQuantizeLinear":
            if ranks.get(node.input[0], 0) < (3 if mask else 2):
                raise ValueError(f"the rank of {node.input[0]!r}, quantised for a product, is unknown or too low")
            out += _row_quantiser(node, ranks[node.input[0]], opset, consts, f"{mask}_3d" if mask else None)
        elif node.op_type == "MatMulInteger" and node.input[0] in quantisers:
            out += _row_zero_corrected(node, inits, consts)
        else:
            out.append(node)
    model.graph.ClearField("node")
    model.graph.node.extend(out)
    model.graph.initializer.extend(consts)
    onnx.checker.check_model(model) if model.ByteSize() < 2**31 else None
    return model


def _row_quantiser(node, rank: int, opset: int, consts: list, mask: str | None = None) -> list:
    """The nodes of one DynamicQuantizeLinear taken per row: its formula over every axis but the first (the scale,
    the zero point as int32 for the product's correction, the uint8 activations), its range over `mask`'s positions
    where given; appends its constants."""
    from onnx import TensorProto, helper, numpy_helper

    x, (xq, scale, zero) = node.input[0], node.output
    p = f"{xq}_row"
    axes = list(range(1, rank))  # every axis but the batch's
    if opset >= 18:  # ReduceMax and ReduceMin take their axes as an input from opset 18
        consts.append(numpy_helper.from_array(np.array(axes, np.int64), f"{p}_axes"))
    ranged = f"{p}_masked" if mask else x

    def reduce(op, name):
        if opset >= 18:
            return helper.make_node(op, [ranged, f"{p}_axes"], [name], keepdims=1)
        return helper.make_node(op, [ranged], [name], axes=axes, keepdims=1)

    shapes = (("1d", [-1]), ("nd", [-1] + [1] * len(axes)))  # a row's one value, flat and at the input's rank
    consts += [numpy_helper.from_array(np.array(shape, np.int64), f"{p}_{name}") for name, shape in shapes]
    return [
        *([helper.make_node("Mul", [x, mask], [ranged])] if mask else []),
        reduce("ReduceMax", f"{p}_max"),
        reduce("ReduceMin", f"{p}_min"),
        helper.make_node("Max", [f"{p}_max", "per_row_zero"], [f"{p}_hi"]),
        helper.make_node("Min", [f"{p}_min", "per_row_zero"], [f"{p}_lo"]),
        helper.make_node("Sub", [f"{p}_hi", f"{p}_lo"], [f"{p}_range"]),
        helper.make_node("Div", [f"{p}_range", "per_row_qmax"], [f"{p}_scale0"]),
        helper.make_node("Max", [f"{p}_scale0", "per_row_tiny"], [scale]),  # a row of zeros: scale tiny
        helper.make_node("Sub", ["per_row_zero", f"{p}_lo"], [f"{p}_neglo"]),
        # QuantizeLinear along the batch's axis (DynamicQuantizeLinear's kernel): round(x / scale) + zero, to uint8
        helper.make_node("Reshape", [scale, f"{p}_1d"], [f"{p}_scale1"]),
        helper.make_node("Reshape", [f"{p}_neglo", f"{p}_1d"], [f"{p}_neglo1"]),
        helper.make_node("QuantizeLinear", [f"{p}_neglo1", f"{p}_scale1"], [f"{p}_zq"], axis=0),
        helper.make_node("QuantizeLinear", [x, f"{p}_scale1", f"{p}_zq"], [xq], axis=0),
        helper.make_node("Cast", [f"{p}_zq"], [f"{p}_zi"], to=TensorProto.INT32),
        helper.make_node("Reshape", [f"{p}_zi", f"{p}_nd"], [zero]),
    ]


def _row_zero_corrected(node, inits: dict, consts: list) -> list:
    """A MatMulInteger without its activation zero point, less the row's zero point times the weight's column sums
    (exact int32); appends the column sums."""
    from onnx import helper, numpy_helper

    a, w, a_zero = node.input[0], node.input[1], node.input[2]
    w_zero = node.input[3] if len(node.input) > 3 else ""
    weight = numpy_helper.to_array(inits[w])
    column_sums = weight.sum(axis=0, dtype=np.int64)  # summed in place: an int64 copy of a 121M model's block is 280 MB
    if w_zero:
        column_sums -= weight.shape[0] * numpy_helper.to_array(inits[w_zero]).astype(np.int64)
    sums = f"{w}_column_sums"
    consts.append(numpy_helper.from_array(column_sums.astype(np.int32), sums))
    raw = f"{node.output[0]}_raw"
    return [
        helper.make_node("MatMulInteger", [a, w, "", w_zero] if w_zero else [a, w], [raw], name=node.name),
        helper.make_node("Mul", [a_zero, sums], [f"{raw}_zero"]),
        helper.make_node("Sub", [raw, f"{raw}_zero"], [node.output[0]]),
    ]


def _quantize_iteration(src: Path, dst: Path, per_row: bool = False) -> None:
    """quantize_dynamic of an iteration graph; `per_row` (a batched graph): its activations get a scale per row.

    A lone graph runs one row, for which the per-call scale is the per-row one, bit for bit, and keeps
    quantize_dynamic's form: onnxruntime fuses each DynamicQuantizeLinear and MatMulInteger into one kernel (an int8
    layer of the 124M explicit transformer: 0.36 ms a call against 0.79 ms in per_row_activations' operators)."""
    import onnx

    model = onnx.load(str(src))
    _quantize_padded(model, dst, kept=kept_in_fp32(model))
    if per_row:
        onnx.save(per_row_activations(onnx.load(str(dst))), str(dst))


def _quantize_padded(model, dst: Path, kept: list[str] | None = None) -> None:
    """quantize_dynamic of `model` into `dst`: 8-bit weights with a scale and zero point per output channel, each
    padded to a multiple of 16 columns first (int8_widths); the products named in `kept` stay fp32."""
    import onnx
    from onnxruntime.quantization import quantize_dynamic

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "padded.onnx"
        onnx.save(pad_product_widths(model, skip=kept or []), str(src))
        quantize_dynamic(
            str(src),
            str(dst),
            per_channel=True,
            weight_type=weight_type(),
            op_types_to_quantize=["MatMul"],
            nodes_to_exclude=kept or [],
        )


def _tied_node(model, vocab_size: int, d_model: int):
    """(node, initializer) of the head's product by the tied matrix: MatMul by [D, V] or Gemm(transB=1) by [V, D]."""
    inits = {t.name: t for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type not in ("MatMul", "Gemm") or len(node.input) < 2 or node.input[1] not in inits:
            continue
        dims = list(inits[node.input[1]].dims)
        trans_b = any(a.name == "transB" and a.i == 1 for a in node.attribute)
        if (node.op_type == "MatMul" and dims == [d_model, vocab_size]) or (
            node.op_type == "Gemm" and trans_b and dims == [vocab_size, d_model]
        ):
            return node, inits[node.input[1]]
    raise ValueError(f"the head graph has no product by a [{d_model}, {vocab_size}] tied matrix")


def _head_as_matmul(head_path: Path, vocab_size: int, d_model: int):
    """The fp32 head with its tied product as a MatMul by W [D, V] (the layout MatMulInteger takes), no bias."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(head_path))  # loads external data (a programme model's tied.bin) too
    node, weight = _tied_node(model, vocab_size, d_model)
    if node.op_type == "Gemm":
        if len(node.input) > 2 and node.input[2]:
            raise ValueError("the head's Gemm has a bias; the tied head has none")
        flipped = np.ascontiguousarray(numpy_helper.to_array(weight).T)
        weight.CopyFrom(numpy_helper.from_array(flipped, weight.name))
        matmul = helper.make_node("MatMul", list(node.input[:2]), list(node.output), name=node.name or "tied_matmul")
        nodes = list(model.graph.node)
        index = nodes.index(node)
        model.graph.ClearField("node")
        model.graph.node.extend([*nodes[:index], matmul, *nodes[index + 1 :]])
    return model


def _quantize_head(out_dir: Path, head_name: str, vocab_size: int, d_model: int):
    """Quantise the head's tied product per vocabulary entry: (model, uint8 [D, V], scale [V], zero point [V])."""
    import onnx

    with tempfile.TemporaryDirectory() as tmp:
        dst = Path(tmp) / "head.int8.onnx"
        _quantize_padded(_head_as_matmul(out_dir / head_name, vocab_size, d_model), dst)
        quantized = per_row_activations(onnx.load(str(dst)))
    inits = {t.name: t for t in quantized.graph.initializer}
    weight = next(t for t in inits.values() if list(t.dims) == [d_model, padded_width(vocab_size)])
    if weight.data_type not in (onnx.TensorProto.UINT8, onnx.TensorProto.INT8):
        raise ValueError("the head's tied matrix was not quantised to 8 bits")
    base = weight.name[: -len("_quantized")] if weight.name.endswith("_quantized") else weight.name
    return quantized, weight, inits[f"{base}_scale"], inits[f"{base}_zero_point"]


def _embed_int8(embed_path: Path, weight, scale, zero, vocab_size: int, d_model: int):
    """The embedding graph with its Gather of the fp32 [V, D] matrix replaced by a Gather of 8-bit [D, V] columns,
    transposed to [.., D], less each entry's zero point and times its scale."""
    import onnx
    from onnx import helper

    model = onnx.load(str(embed_path))
    inits = {t.name: t for t in model.graph.initializer}
    ids_input = model.graph.input[0].name  # input_ids (a position table may have the same shape)
    gathers = [
        n
        for n in model.graph.node
        if n.op_type == "Gather"
        and n.input[1] == ids_input
        and n.input[0] in inits
        and list(inits[n.input[0]].dims) == [vocab_size, d_model]
    ]
    if len(gathers) != 1:
        raise ValueError(f"the embedding graph has {len(gathers)} gathers of a [{vocab_size}, {d_model}] matrix")
    gather, out = gathers[0], gathers[0].output[0]
    old = inits[gather.input[0]]
    ids = gather.input[1]
    p = "tied_int8"
    new_nodes = [
        helper.make_node("Gather", [weight.name, ids], [f"{p}_cols"], axis=1),  # [D, ...ids]
        helper.make_node("Cast", [f"{p}_cols"], [f"{p}_colsf"], to=onnx.TensorProto.FLOAT),
        helper.make_node("Gather", [scale.name, ids], [f"{p}_scale"], axis=0),  # [...ids]
        helper.make_node("Unsqueeze", [f"{p}_scale", f"{p}_axes"], [f"{p}_scale1"]),  # [...ids, 1]
        helper.make_node("Gather", [zero.name, ids], [f"{p}_zero"], axis=0),
        helper.make_node("Cast", [f"{p}_zero"], [f"{p}_zerof"], to=onnx.TensorProto.FLOAT),
        helper.make_node("Unsqueeze", [f"{p}_zerof", f"{p}_axes"], [f"{p}_zero1"]),
    ]
    # [D, B, T] -> [B, T, D] (the embedding's ids are [B, T])
    new_nodes += [
        helper.make_node("Transpose", [f"{p}_colsf"], [f"{p}_rows"], perm=[1, 2, 0]),
        helper.make_node("Sub", [f"{p}_rows", f"{p}_zero1"], [f"{p}_centred"]),
        helper.make_node("Mul", [f"{p}_centred", f"{p}_scale1"], [out]),
    ]
    nodes = list(model.graph.node)
    index = nodes.index(gather)
    model.graph.ClearField("node")
    model.graph.node.extend([*nodes[:index], *new_nodes, *nodes[index + 1 :]])
    kept = [t for t in model.graph.initializer if t.name != old.name]
    model.graph.ClearField("initializer")
    axes = onnx.numpy_helper.from_array(np.array([-1], dtype=np.int64), f"{p}_axes")
    model.graph.initializer.extend([*kept, weight, scale, zero, axes])
    return model


def _externalise(models: list, weight_name: str, out_dir: Path) -> None:
    """Point each model's int8 tied matrix at TIED_INT8_FILE (written once)."""
    import onnx
    from onnx.external_data_helper import set_external_data

    data = None
    for model in models:
        tensor = next(t for t in model.graph.initializer if t.name == weight_name)
        if tensor.HasField("raw_data") and tensor.raw_data:
            raw = tensor.raw_data
        else:
            raw = onnx.numpy_helper.to_array(tensor).tobytes()
        if data is None:
            data = raw
            (out_dir / TIED_INT8_FILE).write_bytes(data)
        elif raw != data:
            raise ValueError("the int8 tied matrices of the embedding and the head differ")
        set_external_data(tensor, location=TIED_INT8_FILE, offset=0, length=len(data))
        tensor.ClearField("raw_data")
        tensor.ClearField("int32_data")
        tensor.data_location = onnx.TensorProto.EXTERNAL


def add_int8(out_dir: Path) -> dict:
    """Write the int8 graphs of the export in out_dir beside its fp32 ones and list them in its manifest.json;
    returns the manifest."""
    import onnx

    out_dir = Path(out_dir)
    manifest = json.loads((out_dir / "manifest.json").read_text())
    graphs = dict(manifest["graphs"])
    fp32 = {role: name for role, name in graphs.items() if not role.endswith("_int8")}
    vocab, d = int(manifest["vocab_size"]), int(manifest["d_model"])
    for role, name in fp32.items():
        if is_iteration_role(role):
            _quantize_iteration(out_dir / name, out_dir / int8_name(name), per_row=role.endswith("_batched"))
            graphs[f"{role}_int8"] = int8_name(name)
    head, weight, scale, zero = _quantize_head(out_dir, fp32["head"], vocab, d)
    embed = _embed_int8(out_dir / fp32["embed"], weight, scale, zero, vocab, d)
    once = bool(manifest.get("external_data"))  # the fp32 export stores its tied matrix once (a programme model's)
    if once:
        _externalise([embed, head], weight.name, out_dir)
    for role, model in (("embed", embed), ("head", head)):
        onnx.save(model, str(out_dir / int8_name(fp32[role])))
        graphs[f"{role}_int8"] = int8_name(fp32[role])
    # the fp32 graphs first, then their int8 twins in the same order
    twins = [f"{role}_int8" for role in fp32 if f"{role}_int8" in graphs]
    manifest["graphs"] = {**fp32, **{twin: graphs[twin] for twin in twins}}
    hashes = dict(manifest.get("graph_sha256") or {})
    for twin in twins:
        hashes[twin] = sha256(out_dir / graphs[twin])
    if once:
        manifest["external_data"] = {**manifest["external_data"], TIED_INT8_FILE: ["embed_int8", "head_int8"]}
        hashes[TIED_INT8_FILE] = sha256(out_dir / TIED_INT8_FILE)
    manifest["graph_sha256"] = hashes
    manifest["precisions"] = ["fp32", "int8"]
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    # a lone iteration graph and its batched one hold the same 8-bit weights: stored once, as the fp32 ones are
    for role in fp32:
        if is_iteration_role(role) and f"{role}_batched" in fp32:
            manifest = share_weights(out_dir, (f"{role}_int8", f"{role}_batched_int8"), int8_weights_file(role))
    return manifest
