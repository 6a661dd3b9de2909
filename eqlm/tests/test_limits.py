"""The request limits are defined once (eqlm.limits); every model's manifest carries them for the browser."""

import hashlib
import json
from pathlib import Path

import pytest

from eqlm import limits
from eqlm.checkpoint import load_checkpoint
from eqlm.export import trained_max_depth
from eqlm.generation import GenerationRequest
from eqlm.noise import NOISE_RNG

MODELS = Path(__file__).resolve().parents[2] / "models"


@pytest.mark.parametrize("manifest", sorted(MODELS.glob("*/onnx/manifest.json")), ids=lambda p: p.parent.parent.name)
def test_every_committed_manifest_records_the_limits_and_its_graphs_are_unchanged(manifest):
    data = json.loads(manifest.read_text())
    if data.get("model_class") == "ExplicitLM":  # its depth is its layer count; it takes no other control
        layers = data["n_layers"]
        assert (data["min_depth"], data["default_depth"], data["max_depth"]) == (layers, layers, layers)
        assert data["solvers"] == [limits.DEFAULT_SOLVER] and data["starts"] == [] and data["halts"] == []
    else:
        # the cap is the deepest depth the model's recipe trained, 64 at least (eqlm.export.trained_max_depth)
        _, checkpoint = load_checkpoint(MODELS / data["model_id"] / "checkpoint.pt")
        assert (data["min_depth"], data["max_depth"]) == (limits.DEPTH_MIN, trained_max_depth(checkpoint["provenance"]))
        assert data["solvers"] == list(limits.SOLVERS)
        assert data["starts"] == list(limits.STARTS) and data["halts"] == list(limits.HALTS)
        assert data["noise_rng"] == NOISE_RNG
        assert limits.DEPTH_MIN <= data["default_depth"] <= data["max_depth"]
        assert limits.model_depths(data) == (data["default_depth"], data["max_depth"])
    for role, name in data["graphs"].items():  # the limits were added to the manifests, the graphs not re-exported
        assert hashlib.sha256((manifest.parent / name).read_bytes()).hexdigest() == data["graph_sha256"][role]


def test_the_served_model_goes_to_depth_128_because_its_recipe_trained_depths_up_to_128():
    served = json.loads((MODELS / limits.DEFAULT_MODEL_ID / "onnx" / "manifest.json").read_text())
    recipe = json.loads((MODELS / "depth-random" / "onnx" / "manifest.json").read_text())
    assert served["max_depth"] == limits.DEPTH_CAP_MAX == 128
    assert recipe["max_depth"] == limits.DEPTH_MAX  # depth-random's solve drew depths up to 64
    assert trained_max_depth({"resolved_stage": {"solve": {"kind": "equilibrium", "depth": {"max": 512}}}}) == 128
    assert trained_max_depth({"resolved_stage": {"solve": {"kind": "unrolled", "depth": {"max": 128}}}}) == 64
    assert trained_max_depth({}) == limits.DEPTH_MAX


def test_the_served_model_generates_at_depth_128_and_refuses_129():
    from eqlm.generation import Generator

    generator = Generator(MODELS / limits.DEFAULT_MODEL_ID / "onnx")
    assert generator.generate(GenerationRequest("In the beginning", max_tokens=2, depth=128)).completion_tokens == 2
    with pytest.raises(ValueError, match="between 1 and 128"):
        generator.generate(GenerationRequest("In the beginning", max_tokens=2, depth=129))


def test_a_request_is_held_to_the_limits():
    GenerationRequest("a", depth=limits.DEPTH_MIN).validate()
    GenerationRequest("a", depth=limits.DEPTH_MAX).validate()
    for depth in (limits.DEPTH_MIN - 1, limits.DEPTH_MAX + 1):
        with pytest.raises(ValueError, match=f"between {limits.DEPTH_MIN} and {limits.DEPTH_MAX}"):
            GenerationRequest("a", depth=depth).validate()
    assert GenerationRequest("a").solver == limits.DEFAULT_SOLVER == limits.SOLVERS[0]
    with pytest.raises(ValueError, match="solver must be 'picard' or 'anderson'"):
        GenerationRequest("a", solver="newton").validate()


def test_a_request_is_held_to_the_models_cap_when_it_has_one():
    GenerationRequest("a", depth=limits.DEPTH_CAP_MAX).validate(max_depth=limits.DEPTH_CAP_MAX)
    with pytest.raises(ValueError, match=f"between {limits.DEPTH_MIN} and 12"):
        GenerationRequest("a", depth=13).validate(max_depth=12)


@pytest.mark.parametrize(
    "manifest, depths",
    [({}, (limits.DEFAULT_DEPTH, limits.DEPTH_MAX)), ({"default_depth": 16, "max_depth": 128}, (16, 128))],
)
def test_a_models_depths_come_from_its_manifest(manifest, depths):
    assert limits.model_depths(manifest) == depths


@pytest.mark.parametrize(
    "manifest, message",
    [
        ({"max_depth": limits.DEPTH_CAP_MAX + 1}, "max_depth must be between 1 and 128, not 129"),
        ({"max_depth": 0}, "max_depth must be between 1 and 128, not 0"),
        ({"default_depth": 12, "max_depth": 8}, "default_depth must be between 1 and its max_depth 8, not 12"),
    ],
)
def test_a_manifest_cannot_declare_a_cap_above_the_largest_or_below_its_default(manifest, message):
    with pytest.raises(ValueError, match=message):
        limits.model_depths(manifest)


def test_starts_and_halting_rules_are_named_once():
    assert limits.STARTS[0] == limits.DEFAULT_START == GenerationRequest("a").start == "zero"
    assert limits.HALTS[0] == limits.DEFAULT_HALT == GenerationRequest("a").halt == "residual"
    with pytest.raises(ValueError, match="start must be 'zero', 'warm' or 'noise'"):
        GenerationRequest("a", start="random").validate()
    with pytest.raises(ValueError, match="halt must be 'residual' or 'kl'"):
        GenerationRequest("a", halt="entropy").validate()
