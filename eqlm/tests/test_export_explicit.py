"""An explicit transformer's ONNX export: one graph per layer, decoded incrementally exactly as torch computes the
whole sequence, at its one depth; every other control is refused."""

import json

import numpy as np
import onnx
import pytest
import torch

from eqlm.decoder import DecodeCache, OnnxEqLM, process
from eqlm.generation import GenerationRequest, Generator
from eqlm.manifest import ControlRefused
from eqlm.scoring import bits_per_byte, rolling_bits_per_byte, score_prompt
from eqlm.testing import export_tiny_explicit_model, tiny_explicit_model

LAYERS = 3


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = export_tiny_explicit_model(tmp_path_factory.mktemp("explicit"), seed=4, n_layers=LAYERS)
    return tiny_explicit_model(seed=4, n_layers=LAYERS), out


def torch_logits(model, ids: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return model(torch.as_tensor(ids)).numpy()


def test_the_manifest_lists_one_graph_per_layer_in_order_and_fixes_the_depth(exported):
    _, out = exported
    manifest = json.loads((out / "manifest.json").read_text())
    roles = [f"layer_{i:02d}" for i in range(LAYERS)]
    assert manifest["model_class"] == "ExplicitLM" and manifest["layers"] == roles
    batched = [f"{role}_batched" for role in roles]  # each layer's batched twin (eqlm/export_batched.py)
    assert list(manifest["graphs"]) == ["embed", *roles, "head", *batched]
    assert manifest["batched_layers"] == batched
    assert set(manifest["graph_sha256"]) == set(manifest["graphs"])
    assert manifest["default_depth"] == manifest["min_depth"] == manifest["max_depth"] == LAYERS
    assert (manifest["solvers"], manifest["starts"], manifest["halts"]) == (["picard"], [], [])
    assert {"start", "layers", "cache", "controls"} <= set(manifest["semantics"])
    assert "embedding" in manifest["semantics"]["start"]


def test_a_layer_graph_takes_no_injection(exported):
    _, out = exported
    graph = onnx.load(str(out / "layer_00.onnx"))
    assert [i.name for i in graph.graph.input] == ["z", "past_k", "past_v"]
    assert [o.name for o in graph.graph.output] == ["z_next", "k", "v", "residual"]


def test_the_whole_sequence_through_onnxruntime_is_the_torch_forward_pass(exported):
    model, out = exported
    ids = np.random.default_rng(1).integers(0, 256, (2, 40))
    got = OnnxEqLM(out).full_solve(ids, [LAYERS])[LAYERS]
    assert np.abs(got - torch_logits(model, ids)).max() <= 1e-4


def test_decoding_one_token_at_a_time_equals_recomputing_the_whole_sequence(exported):
    """The per-layer K/V cache over positions: each new position's logits are those of the full forward pass."""
    model, out = exported
    onnx_model = OnnxEqLM(out)
    ids = list(np.random.default_rng(2).integers(0, 256, 30))
    cache = DecodeCache(onnx_model, LAYERS)
    z, iterations, _ = process(onnx_model, cache, ids[:7], LAYERS, None, "picard")
    rows = [onnx_model.head(z)[0]]
    assert list(iterations) == [LAYERS] * 7
    for token in ids[7:]:
        z, _, _ = process(onnx_model, cache, [token], LAYERS, None, "picard")
        rows.append(onnx_model.head(z)[0])
    assert np.abs(np.concatenate(rows) - torch_logits(model, np.asarray([ids]))[0]).max() <= 1e-4


def test_greedy_generation_at_its_depth_is_torch_greedy_and_reports_no_residual(exported):
    model, out = exported
    result = Generator(out).generate(GenerationRequest(prompt="In the beginning", max_tokens=12, temperature=0))
    ids = list(b"In the beginning")
    for _ in range(12):
        ids.append(int(np.argmax(torch_logits(model, np.asarray([ids]))[0, -1])))
    assert [e.token_id for e in result.tokens] == ids[-12:]
    assert {e.iterations for e in result.tokens} == {LAYERS}
    assert all(np.isnan(e.residual) for e in result.tokens)


def test_scoring_at_its_depth_is_the_torch_cross_entropy(exported):
    model, out = exported
    onnx_model = OnnxEqLM(out)
    text = b"And God said, Let there be light: and there was light."
    logits = torch.as_tensor(torch_logits(model, np.frombuffer(text, dtype=np.uint8)[None, :].astype(np.int64)))
    nll = torch.nn.functional.cross_entropy(logits[0, :-1].double(), torch.as_tensor(list(text[1:])))
    score = score_prompt(onnx_model, list(text), LAYERS)
    assert sum(score.token_logprobs()) == pytest.approx(-float(nll) * (len(text) - 1), rel=1e-4)
    assert set(bits_per_byte(onnx_model, text * 3, [LAYERS], window=32)) == {LAYERS}
    assert rolling_bits_per_byte(onnx_model, text * 3, LAYERS, max_length=32) > 0


REFUSED = {
    "a depth below its layer count": ({"depth": LAYERS - 1}, "depth", "layer count"),
    "a depth above it": ({"depth": LAYERS + 1}, "depth", "layer count"),
    "a tol": ({"tol": 0.01}, "tol", "no position halts"),
    "anderson": ({"solver": "anderson"}, "solver", "no fixed point"),
    "a warm start": ({"start": "warm"}, "start", "embedding"),
    "the older warm start": ({"warm_start": True}, "start", "embedding"),
    "a noise start": ({"start": "noise"}, "start", "embedding"),
    "the kl rule": ({"halt": "kl"}, "halt", "halting rule"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_generation_refuses_every_other_control_saying_why(exported, case):
    _, out = exported
    fields, control, why = REFUSED[case]
    with pytest.raises(ControlRefused, match=why) as refused:
        Generator(out).generate(GenerationRequest(prompt="In", max_tokens=2, **fields))
    assert refused.value.control == control and isinstance(refused.value, ValueError)


def test_scoring_refuses_another_depth_and_a_tol(exported):
    _, out = exported
    onnx_model = OnnxEqLM(out)
    with pytest.raises(ControlRefused, match="layer count"):
        bits_per_byte(onnx_model, b"In the beginning God created" * 4, [1, LAYERS], window=32)
    with pytest.raises(ControlRefused, match="no position halts"):
        score_prompt(onnx_model, list(b"In the beginning"), LAYERS, tol=0.01)
    with pytest.raises(ControlRefused, match="layer count"):
        score_prompt(onnx_model, list(b"In the beginning"), 8)


def test_an_equilibrium_model_takes_every_control(tmp_path):
    from eqlm.manifest import refused_controls
    from eqlm.testing import export_tiny_model

    manifest = json.loads((export_tiny_model(tmp_path) / "manifest.json").read_text())
    given = {"depth": 1, "tol": 0.01, "solver": "anderson", "start": "noise", "halt": "kl", "warm_start": False}
    assert refused_controls(manifest, given) == []


def test_an_explicit_transformer_cannot_be_a_council_member(exported, tmp_path):
    from eqlm.council import CouncilGenerator, Kinetic
    from eqlm.testing import export_tiny_model

    _, out = exported
    members = [Generator(export_tiny_model(tmp_path)), Generator(out)]
    with pytest.raises(
        ValueError, match=r"kinetic.members\[1\] cannot be a council member: it is an explicit transformer"
    ):
        CouncilGenerator(members, Kinetic())
