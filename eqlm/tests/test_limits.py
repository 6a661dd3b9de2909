"""The request limits are defined once (eqlm.limits); every model's manifest carries them for the browser."""

import hashlib
import json
from pathlib import Path

import pytest

from eqlm import limits
from eqlm.generation import GenerationRequest

MODELS = Path(__file__).resolve().parents[2] / "static" / "models"


@pytest.mark.parametrize("manifest", sorted(MODELS.glob("*/manifest.json")), ids=lambda p: p.parent.name)
def test_every_committed_manifest_records_the_limits_and_its_graphs_are_unchanged(manifest):
    data = json.loads(manifest.read_text())
    assert (data["min_depth"], data["max_depth"]) == (limits.DEPTH_MIN, limits.DEPTH_MAX)
    assert data["solvers"] == list(limits.SOLVERS)
    assert limits.DEPTH_MIN <= data["default_depth"] <= limits.DEPTH_MAX
    for role, name in data["graphs"].items():  # the limits were added to the manifests, the graphs not re-exported
        assert hashlib.sha256((manifest.parent / name).read_bytes()).hexdigest() == data["graph_sha256"][role]


def test_a_request_is_held_to_the_limits():
    GenerationRequest("a", depth=limits.DEPTH_MIN).validate()
    GenerationRequest("a", depth=limits.DEPTH_MAX).validate()
    for depth in (limits.DEPTH_MIN - 1, limits.DEPTH_MAX + 1):
        with pytest.raises(ValueError, match=f"between {limits.DEPTH_MIN} and {limits.DEPTH_MAX}"):
            GenerationRequest("a", depth=depth).validate()
    assert GenerationRequest("a").solver == limits.DEFAULT_SOLVER == limits.SOLVERS[0]
    with pytest.raises(ValueError, match="solver must be 'picard' or 'anderson'"):
        GenerationRequest("a", solver="newton").validate()
