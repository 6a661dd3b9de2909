"""An explicit transformer's chained pass: every layer of a position in one onnxruntime call, built in memory from the
layer graphs, giving what the layers give one call at a time, bit for bit."""

import os
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest

from eqlm import decoder
from eqlm.chained import chained_graph
from eqlm.decoder import DecodeCache, OnnxEqLM, graph_bytes, process
from eqlm.generation import GenerationRequest, Generator

ROOT = Path(__file__).resolve().parents[2]
EXPLICIT = ROOT / "models" / "explicit-demo" / "onnx"
PROGRAMME = Path(os.environ.get("PROGRAMME_MODELS_DIR", ROOT.parent / "shared" / "programme-models"))
PROGRAMME_IDS = [464, 2068, 7586, 21831, 18045, 625, 262, 16931, 3290, 13]


def decoded(model: OnnxEqLM, prompt: list[int], tokens: int, one_layer_a_call: bool):
    """Greedy decoding through decoder.process: the logits of each step and the cache. A solve that records its
    steps (`history`) runs the layers one call at a time; otherwise the chained pass runs them."""
    n = len(model.manifest["layers"])
    cache = DecodeCache(model, n)
    ids, logits, history = list(prompt), [], [] if one_layer_a_call else None
    for _ in range(tokens):
        z, iterations, residual = process(model, cache, ids, n, None, "picard", history=history)
        assert list(iterations) == [n] * len(ids) and np.isnan(residual).all()
        logits.append(model.head(z[:, -1:])[0, -1])
        ids = [int(np.argmax(logits[-1]))]
    return np.stack(logits), cache


def same_as_one_layer_a_call(model: OnnxEqLM, prompt: list[int]) -> None:
    chained, chained_cache = decoded(model, prompt, 10, one_layer_a_call=False)
    layered, layered_cache = decoded(model, prompt, 10, one_layer_a_call=True)
    assert np.array_equal(chained, layered)
    assert np.array_equal(chained_cache.k, layered_cache.k) and np.array_equal(chained_cache.v, layered_cache.v)
    assert chained_cache.length == layered_cache.length == len(prompt) + 9


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_a_chained_pass_gives_the_logits_and_kv_of_one_layer_a_call_bit_for_bit(precision, explicit_int8):
    same_as_one_layer_a_call(OnnxEqLM(explicit_int8, precision=precision, threads=2), list(b"In the beginning"))


def test_a_chained_window_gives_the_states_of_one_layer_a_call_bit_for_bit():
    model = OnnxEqLM(EXPLICIT)
    ids = np.array([list(b"And God said"), list(b"Let there be")])
    inj, states = model.joint_states(ids, [12])
    z, empty = model.start_state(inj), model.empty_kv(2)
    for layer in range(12):
        z = model.step(z, inj, empty, empty, layer)[0]
    assert list(states) == [12] and np.array_equal(states[12], z)


def test_a_chained_pass_reads_the_layers_weights_from_their_external_data_files(tmp_path, monkeypatch):
    """As a large export stores them (each layer's weights in layer_NN.bin, shared with its batched graph)."""
    from eqlm import onnx_share

    export = tmp_path / "onnx"
    shutil.copytree(EXPLICIT, export)
    monkeypatch.setattr(onnx_share, "MIN_SHARED_BYTES", 1 << 10)
    for role in OnnxEqLM(EXPLICIT).manifest["layers"]:
        manifest = onnx_share.share_weights(export, (role, f"{role}_batched"), f"{role}.bin")
    names = [manifest["graphs"][role] for role in manifest["layers"]]
    chained = onnx.load_model_from_string(chained_graph(export, names))
    external = [t for t in chained.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    where = {entry.value for t in external for entry in t.external_data if entry.key == "location"}
    assert where == set(manifest["external_data"]) == {f"{role}.bin" for role in manifest["layers"]}
    assert sum(len(t.raw_data) for t in chained.graph.initializer) < (1 << 10) * len(chained.graph.initializer)
    same_as_one_layer_a_call(OnnxEqLM(export), list(b"Blessed are"))
    moved = tmp_path / "elsewhere"  # the files are found in the export's folder, wherever the process runs
    export.rename(moved)
    monkeypatch.chdir(tmp_path)
    same_as_one_layer_a_call(OnnxEqLM(moved), list(b"Blessed are"))


@pytest.mark.skipif(not (PROGRAMME / "explicit-2layer.pt").exists(), reason="the programme's reference checkpoints")
def test_a_programme_explicit_exports_chained_pass_gives_what_its_layers_give_one_call_at_a_time(tmp_path):
    from eqlm.export_programme import export_programme_onnx
    from eqlm.programme.checkpoint import load_programme_model

    model, _ = load_programme_model(PROGRAMME / "explicit-2layer.pt", 10**9)
    export_programme_onnx(model, tmp_path, model_id="explicit-2layer", int8=True)
    for precision in ("fp32", "int8"):
        same_as_one_layer_a_call(OnnxEqLM(tmp_path, precision=precision), PROGRAMME_IDS)


def test_a_lone_generation_runs_small_chained_layers_on_one_thread_and_loads_no_other_layer_session():
    generator = Generator(EXPLICIT, threads=2)
    generator.generate(GenerationRequest(prompt="In the", max_tokens=4))
    # the layers' weights are held once: the one-at-a-time sessions never load for a lone generation
    assert generator.model._layer_sessions is None
    assert generator.model.chain_session.get_session_options().intra_op_num_threads == 1  # small layers


def test_a_large_explicit_transformers_chained_layers_run_on_the_threads_asked_spinning_only_inside_a_call(
    monkeypatch,
):
    monkeypatch.setattr(decoder, "SMALL_GRAPH_BYTES", 0)
    model = OnnxEqLM(EXPLICIT, threads=2)
    options = model.chain_session.get_session_options()
    assert options.intra_op_num_threads == 2
    # its threads wait for the next product spinning, and sleep once the call returns
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "1"
    assert options.get_session_config_entry("session.force_spinning_stop") == "1"
    # every other graph's threads sleep while they wait
    for session in (model.head_sess, model.embed_sess):
        assert session.get_session_options().get_session_config_entry("session.intra_op.allow_spinning") == "0"


def test_the_chains_threads_follow_its_layers_weight_bytes_together_not_one_layers(monkeypatch):
    """Layers each under the threshold but over it together are a large chain: it runs on the threads asked, while
    each layer alone would run on one."""
    model = OnnxEqLM(EXPLICIT, threads=2)
    sizes = [graph_bytes(EXPLICIT, model.manifest, f"{role}.onnx") for role in model.manifest["layers"]]
    monkeypatch.setattr(decoder, "SMALL_GRAPH_BYTES", max(sizes) + 1)
    assert sum(sizes) >= decoder.SMALL_GRAPH_BYTES
    model = OnnxEqLM(EXPLICIT, threads=2)
    assert model.chain_session.get_session_options().intra_op_num_threads == 2
    assert {s.get_session_options().intra_op_num_threads for s in model.layer_sessions} == {1}


def test_graphs_that_are_not_explicit_transformer_layers_are_not_chained():
    with pytest.raises(ValueError, match="not an explicit transformer layer's"):
        chained_graph(ROOT / "models" / "eqlm-demo" / "onnx", ["head.onnx"])


@pytest.mark.parametrize("precision", ["int8", "fp32"])
def test_a_batching_runtime_never_loads_its_layers_one_at_a_time(precision, explicit_int8):
    """Its prompts and its decoded positions pass through every layer in one call of chained layers, so a batch never
    holds the layers' weights a third time beside its batched graphs and its chain."""
    from eqlm.batched_generator import BatchedGenerator

    batched = BatchedGenerator(explicit_int8, precision=precision)
    assert batched.model._model._layer_sessions is None
    lone = Generator(explicit_int8, precision=precision)
    request = GenerationRequest(prompt="Thou shalt", max_tokens=6)
    assert batched.generate(request).text == lone.generate(request).text
    assert batched.model._model._layer_sessions is None


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_chained_batched_layers_share_one_past_valid_and_give_what_the_layers_give_one_call_at_a_time(
    precision, explicit_int8
):
    """The batched layers (one new position a row, each row's past masked by past_valid) chain as the lone layers
    do: their one mask is one input of the chain, and a pass gives each layer's graph's outputs bit for bit."""
    import onnxruntime as ort

    from eqlm.batch_solve import prefix_mask

    model = OnnxEqLM(explicit_int8, precision=precision)
    suffix = "_int8" if precision == "int8" else ""
    names = [model.manifest["graphs"][f"{role}{suffix}"] for role in model.manifest["batched_layers"]]
    chained = onnx.load_model_from_string(chained_graph(explicit_int8, names))
    inputs = [value.name for value in chained.graph.input]
    assert inputs.count("past_valid") == 1 and len(inputs) == 2 + 2 * len(names)
    session = ort.InferenceSession(chained.SerializeToString(), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(5)
    rows, past, layers = 3, 4, len(names)
    z = rng.standard_normal((rows, 1, model.d_model)).astype(np.float32)
    pasts = rng.standard_normal((layers, 2, rows, model.n_heads, past, model.head_dim)).astype(np.float32)
    valid = prefix_mask([4, 1, 0], past)
    feed = {"z": z, "past_valid": valid}
    for i in range(layers):
        feed[f"past_k_{i:02d}"], feed[f"past_v_{i:02d}"] = pasts[i]
    got = session.run(None, feed)
    for i, name in enumerate(names):
        layer = ort.InferenceSession(str(explicit_int8 / name), providers=["CPUExecutionProvider"])
        z, k, v, _ = layer.run(None, {"z": z, "past_k": pasts[i, 0], "past_v": pasts[i, 1], "past_valid": valid})
        np.testing.assert_array_equal(got[1 + 2 * i], k)
        np.testing.assert_array_equal(got[2 + 2 * i], v)
    np.testing.assert_array_equal(got[0], z)


def test_layers_that_take_different_shared_inputs_are_not_chained(explicit_int8):
    model = OnnxEqLM(explicit_int8)
    graphs = model.manifest["graphs"]
    with pytest.raises(ValueError, match="where the layer before it takes"):
        chained_graph(explicit_int8, [graphs["layer_00_batched"], graphs["layer_01"]])
