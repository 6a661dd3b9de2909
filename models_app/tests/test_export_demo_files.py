"""The committed demo model: checkpoint, ONNX files and metrics load and reproduce (CI never trains)."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from django.conf import settings

from eqlm.checkpoint import load_checkpoint
from eqlm.decoder import OnnxEqLM
from eqlm.generation import GenerationRequest, Generator
from eqlm.scoring import bits_per_byte

DEMO_DIR = Path(settings.MODELS_DIR) / "eqlm-demo"
ONNX_DIR = DEMO_DIR / "onnx"


@pytest.fixture(scope="module")
def metrics():
    return json.loads((DEMO_DIR / "metrics.json").read_text())


@pytest.fixture(scope="module")
def onnx_model():
    return OnnxEqLM(ONNX_DIR, threads=2)


def test_committed_onnx_files_reproduce_the_committed_metrics_on_the_held_out_slice(metrics, onnx_model):
    text = (DEMO_DIR / metrics["ci_slice"]["file"]).read_bytes()
    assert len(text) == metrics["ci_slice"]["bytes"]
    expected = metrics["ci_slice"]["bits_per_byte"]
    measured = bits_per_byte(onnx_model, text, [1, 2, 4, 8, 12])
    for depth, value in measured.items():
        assert abs(value - expected[str(depth)]) <= 0.01, (depth, value, expected[str(depth)])


def test_committed_checkpoint_loads_weights_only_and_matches_its_onnx_export(metrics, onnx_model):
    model, data = load_checkpoint(DEMO_DIR / "checkpoint.pt")
    assert data["provenance"]["corpus_sha256"] == metrics["provenance"]["corpus_sha256"]
    assert model.num_params() == metrics["num_params"]
    ids = torch.tensor([list(b"And God said, Let there be light: and there was light.")])
    for depth in (1, 8):
        expected = model.solve(ids, max_iter=depth).logits[depth].numpy()
        got = onnx_model.full_solve(ids.numpy(), [depth])[depth]
        assert np.abs(expected - got).max() <= 1e-4


def test_manifest_matches_the_model_and_carries_its_metrics_and_limitation(metrics):
    manifest = json.loads((ONNX_DIR / "manifest.json").read_text())
    assert manifest["model_id"] == "eqlm-demo" and manifest["default_depth"] == metrics["config"]["default_depth"]
    assert manifest["d_model"] == metrics["config"]["d_model"]
    assert manifest["metrics"]["held_out_bits_per_byte"] == metrics["held_out_bits_per_byte"]
    assert "not one of the programme" in manifest["limitations"]
    assert all((ONNX_DIR / name).stat().st_size < 4_000_000 for name in manifest["graphs"].values())


def test_metrics_record_training_provenance_and_every_depth(metrics):
    # up to the served model's cap, 128: its recipe trained depths up to 128
    deeper = [16, 24, 32, 48, 64, 96, 128]
    assert sorted(int(d) for d in metrics["held_out_bits_per_byte"]) == [*range(1, 13), *deeper]
    assert metrics["training"]["tokens_seen"] > 0 and metrics["training"]["train_seconds"] > 0
    for key in ("config_hash", "git_commit", "seed", "corpus", "corpus_sha256", "steps", "tokens", "created"):
        assert key in metrics["provenance"]


def test_the_demo_generator_decodes_greedily_and_deterministically():
    generator = Generator(ONNX_DIR)
    first = generator.generate(GenerationRequest(prompt="And God said", max_tokens=16))
    second = generator.generate(GenerationRequest(prompt="And God said", max_tokens=16))
    assert first.text == second.text and first.completion_tokens == 16


def test_the_cards_figures_are_the_committed_metrics_and_stored_rows(metrics):
    """The served model's card shows its whole-slice bits/byte from metrics.json and its 24-window Picard figures
    from the result rows that `seed` loads (fixtures/local_results.json), not figures typed in separately."""
    from models_app.local_results import FIXTURE, records

    card = json.loads((DEMO_DIR / "facts.json").read_text())["evaluation"]["by_depth"]
    rows = records(json.loads(FIXTURE.read_text())["models"]["eqlm-demo"])
    picard = [r for r in rows if r["condition"].get("solver") == "picard" and "depth" in r["condition"]]
    converged = {
        r["condition"]["depth"]: r["value"]
        for r in picard
        if r["metric"] == "converged_fraction" and r["condition"]["tol"] == 0.01
    }
    bpb = {r["condition"]["depth"]: r["value"] for r in picard if r["metric"] == "heldout_bits_per_byte"}
    series = {row["key"]: row["values"] for row in card["rows"]}
    whole, windows, fraction = (series[k] for k in ("export.bits_per_byte", "picard.bits_per_byte", "picard.converged"))
    for i, depth in enumerate(card["depths"]):
        assert whole[i] == round(metrics["held_out_bits_per_byte"][str(depth)], 4)
        assert fraction[i] == round(converged[depth], 4)
        assert windows[i] == round(bpb[depth], 4)
