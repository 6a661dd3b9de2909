"""ONNX export: onnxruntime agrees with torch, the graphs are self-contained, the manifest describes them."""

import json

import numpy as np
import onnx
import pytest
import torch

from eqlm import limits
from eqlm.decoder import OnnxEqLM
from eqlm.export import export_onnx
from eqlm.noise import NOISE_RNG
from eqlm.testing import tiny_model


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    model = tiny_model(seed=5)
    out = tmp_path_factory.mktemp("onnx")
    export_onnx(model, out, int8=True)
    return model, out


@pytest.mark.parametrize("depth", [1, 4, 8, 12])
def test_onnxruntime_logits_match_torch_within_1e_4(exported, depth):
    model, out = exported
    ids = torch.randint(0, 256, (2, 40), generator=torch.Generator().manual_seed(depth))
    expected = model.solve(ids, max_iter=depth).logits[depth].numpy()
    got = OnnxEqLM(out).full_solve(ids.numpy(), [depth])[depth]
    assert np.abs(expected - got).max() <= 1e-4


def test_graphs_are_self_contained_files(exported):
    _, out = exported
    for name in ("embed.onnx", "step.onnx", "head.onnx", "step.int8.onnx"):
        graph = onnx.load(str(out / name), load_external_data=False)
        assert not any(t.data_location == onnx.TensorProto.EXTERNAL for t in graph.graph.initializer)
    assert sorted(p.name for p in out.iterdir() if p.suffix not in (".onnx", ".json")) == []


def test_manifest_describes_dims_and_graph_files(exported):
    model, out = exported
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["d_model"] == model.config.d_model
    assert manifest["default_depth"] == 8
    assert manifest["vocab_size"] == 256
    assert all((out / f).exists() for f in manifest["graphs"].values())


def test_manifest_carries_the_request_limits(exported):
    _, out = exported
    manifest = json.loads((out / "manifest.json").read_text())
    assert (manifest["min_depth"], manifest["max_depth"]) == (limits.DEPTH_MIN, limits.DEPTH_MAX)
    assert manifest["solvers"] == list(limits.SOLVERS)
    assert manifest["starts"] == list(limits.STARTS) and manifest["halts"] == list(limits.HALTS)
    assert manifest["noise_rng"] == NOISE_RNG
    assert {"noise_start", "kl_halting"} <= set(manifest["semantics"])


def test_an_export_declares_its_depth_cap_up_to_the_largest_a_manifest_may(tmp_path):
    model = tiny_model(seed=5)
    assert export_onnx(model, tmp_path / "deep", max_depth=limits.DEPTH_CAP_MAX)["max_depth"] == 128
    for cap in (limits.DEPTH_CAP_MAX + 1, model.config.default_depth - 1):
        with pytest.raises(ValueError, match="must be between"):
            export_onnx(model, tmp_path / f"cap{cap}", max_depth=cap)
        assert not (tmp_path / f"cap{cap}").exists()  # refused before anything is written


def test_int8_step_stays_close_to_fp32(exported):
    model, out = exported
    ids = np.random.default_rng(0).integers(0, 256, (1, 30))
    fp32 = OnnxEqLM(out).full_solve(ids, [4])[4]
    int8 = OnnxEqLM(out, int8=True).full_solve(ids, [4])[4]
    assert np.abs(fp32 - int8).max() < 0.5 * np.abs(fp32).max()
