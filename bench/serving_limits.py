"""The machine's limits for bench/serving.py: read bandwidth (a GEMV), GEMM rate, and a served model's weight bytes.

Every rate is measured through onnxruntime's CPU provider with the serving threads (`intra_op_num_threads`), on
graphs built here with onnx.helper: a MatMul [1, K] x [K, N] whose [K, N] initializer has the bytes asked for
(K = the model's width), and the MatMuls of the block's own weight shapes at a batch of rows.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

CACHE_DIR = Path("/sys/devices/system/cpu/cpu0/cache")
_SIZE_UNITS = {"K": 1024, "M": 1024**2, "G": 1024**3}


def l3_bytes() -> int:
    """The largest cache's size (sysfs; lscpu's figure when sysfs has none); 0 when neither says."""
    sizes = []
    for index in CACHE_DIR.glob("index*"):
        text = (index / "size").read_text().strip() if (index / "size").exists() else ""
        if text:
            sizes.append(int(text[:-1]) * _SIZE_UNITS.get(text[-1], 1) if text[-1] in _SIZE_UNITS else int(text))
    if sizes:
        return max(sizes)
    import subprocess

    for line in subprocess.run(["lscpu", "-B"], capture_output=True, text=True).stdout.splitlines():
        if line.startswith("L3 cache:"):
            return int(line.split(":")[1].split()[0])
    return 0


def _session(model, threads: int):
    """A CPU session of `model`, saved with external data first (a buffer 4x a large L3 passes protobuf's 2 GB)."""
    import tempfile

    import onnx
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    if threads > 1:  # as the served models' sessions (eqlm.decoder.OnnxEqLM)
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "graph.onnx")
        onnx.save(model, path, save_as_external_data=True, location="graph.bin")
        return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def _matmul_graph(weights: list[np.ndarray], batch: int):
    """y_i = x_K x W_i for each weight [K, N] (one input x_K per distinct K)."""
    from onnx import TensorProto, helper, numpy_helper

    widths = sorted({w.shape[0] for w in weights})
    inputs = [helper.make_tensor_value_info(f"x{k}", TensorProto.FLOAT, [batch, k]) for k in widths]
    nodes, outputs, inits = [], [], []
    for i, w in enumerate(weights):
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        nodes.append(helper.make_node("MatMul", [f"x{w.shape[0]}", f"w{i}"], [f"y{i}"]))
        outputs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, [batch, w.shape[1]]))
    graph = helper.make_graph(nodes, "serving_limits", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10  # what onnxruntime 1.22 reads
    return model, widths


def _best_seconds(session, feed: dict, min_seconds: float, min_runs: int = 5) -> float:
    """The fastest of the runs in `min_seconds` (a limit is what the machine can do; other load only slows it)."""
    session.run(None, feed)  # first run: prepacking, arena
    times, started = [], time.perf_counter()
    while len(times) < min_runs or time.perf_counter() - started < min_seconds:
        t0 = time.perf_counter()
        session.run(None, feed)
        times.append(time.perf_counter() - t0)
    return min(times)


def gemv_bandwidth(shapes: list[tuple[int, int]], threads: int, min_seconds: float = 1.0) -> float:
    """Bytes/s of an fp32 GEMV: one row times fp32 matrices of `shapes` ([K, N] each), read once per run."""
    rng = np.random.default_rng(0)
    model, widths = _matmul_graph([rng.standard_normal(shape, dtype=np.float32) for shape in shapes], 1)
    session = _session(model, threads)
    del model
    feed = {f"x{k}": np.ones((1, k), dtype=np.float32) for k in widths}
    return 4 * sum(k * n for k, n in shapes) / _best_seconds(session, feed, min_seconds)


def buffer_shapes(nbytes: int, width: int, like: list[tuple[int, int]] | None = None) -> list[tuple[int, int]]:
    """fp32 matrices of about `nbytes` in all: `like`'s shapes with their N scaled to the bytes (a part's own
    shapes), or one [width, N] matrix."""
    if not like:
        return [(width, max(1, round(nbytes / 4 / width)))]
    scale = nbytes / (4 * sum(k * n for k, n in like))
    return [(k, max(1, round(n * scale))) for k, n in like]


def gemm_flops(shapes: list[tuple[int, int]], batch: int, threads: int, int8: bool = False, min_seconds=1.0) -> float:
    """FLOP/s of the MatMuls of `shapes` ([K, N] each) at `batch` rows; `int8` quantises the weights dynamically
    (onnxruntime.quantization.quantize_dynamic, as eqlm/quantize.py: 8-bit weights, the rows quantised per call)."""
    rng = np.random.default_rng(1)
    model, widths = _matmul_graph([rng.standard_normal(s, dtype=np.float32) * 0.02 for s in shapes], batch)
    if int8:
        model = _quantized(model)
    session = _session(model, threads)
    feed = {f"x{k}": rng.standard_normal((batch, k), dtype=np.float32) for k in widths}
    flops = 2 * batch * sum(k * n for k, n in shapes)
    return flops / _best_seconds(session, feed, min_seconds)


def _quantized(model):
    import tempfile

    import onnx
    from onnxruntime.quantization import quantize_dynamic

    from eqlm.quantize import weight_type

    with tempfile.TemporaryDirectory() as folder:
        src, dst = Path(folder) / "f.onnx", Path(folder) / "q.onnx"
        onnx.save(model, str(src))
        logging.disable(logging.WARNING)  # its advice to pre-process, printed on every call
        try:
            quantize_dynamic(str(src), str(dst), weight_type=weight_type())  # the served int8 graphs' own
        finally:
            logging.disable(logging.NOTSET)
        return onnx.load(str(dst))


@dataclass
class Part:
    """A graph's weights: bytes read per run, matrix elements (2 FLOPs each per row) and its 2-D weight shapes."""

    nbytes: int
    elements: int
    shapes: list[tuple[int, int]]


def graph_part(path: Path) -> Part:
    """The initializers of one ONNX graph (external data counted, not loaded)."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    nbytes, elements, shapes = 0, 0, []
    for tensor in model.graph.initializer:
        count = int(np.prod(tensor.dims)) if tensor.dims else 1
        itemsize = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
        nbytes += count * itemsize
        if len(tensor.dims) == 2:
            elements += count
            shapes.append((int(tensor.dims[0]), int(tensor.dims[1])))
    return Part(nbytes, elements, shapes)


@dataclass
class Costs:
    """What one token costs a model at `depth`: the block (one iteration or one layer) and the head."""

    block: Part
    head: Part
    depth: int
    layers: bool = False  # an explicit transformer: each of the depth slots reads its own layer's weights

    @property
    def block_working_set(self) -> int:
        """The block bytes one token reads: one EqLM block (re-read at every iteration), or every layer."""
        return self.depth * self.block.nbytes if self.layers else self.block.nbytes

    @property
    def bytes_per_token(self) -> int:
        return self.depth * self.block.nbytes + self.head.nbytes

    @property
    def flops_per_token(self) -> int:
        return 2 * (self.depth * self.block.elements + self.head.elements)


def model_costs(onnx_dir: Path, manifest: dict, depth: int, precision: str = "fp32") -> Costs | None:
    """The block's and the head's weights for `precision` (None when the manifest lists no such graphs). An explicit
    transformer's block is its first layer (its layers share one shape; each is read once per token)."""
    from eqlm.manifest import is_explicit, layer_roles

    graphs = manifest["graphs"]
    suffix = "" if precision == "fp32" else f"_{precision}"
    block_role = (layer_roles(manifest)[0] if is_explicit(manifest) else "step") + suffix
    if block_role not in graphs and f"block{suffix}" in graphs:
        block_role = f"block{suffix}"
    if block_role not in graphs or f"head{suffix}" not in graphs:
        return None
    block, head = graph_part(onnx_dir / graphs[block_role]), graph_part(onnx_dir / graphs[f"head{suffix}"])
    return Costs(block, head, depth, layers=is_explicit(manifest))


def bandwidth_bound(costs: Costs, block_bandwidth: float, head_bandwidth: float) -> float:
    """Tokens/s if only the weight reads cost time."""
    return 1 / (costs.depth * costs.block.nbytes / block_bandwidth + costs.head.nbytes / head_bandwidth)


def roofline(costs: Costs, batch: int, gemm_flops_at_batch: float, bound_one: float) -> float:
    """Tokens/s at `batch` rows: min(compute, bandwidth x arithmetic intensity) = min(GEMM rate / FLOPs per token,
    batch x the one-reader bandwidth bound), since `batch` rows share each weight read."""
    return min(gemm_flops_at_batch / costs.flops_per_token, batch * bound_one)
