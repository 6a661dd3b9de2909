"""A registered checkpoint's export gets int8 graphs beside its fp32 ones when the model is over
eqlm.quantize.INT8_ABOVE_PARAMS parameters, or when asked, with the measured difference in its manifest; a smaller
model's export is fp32 alone unless asked."""

import json
from pathlib import Path

import pytest

from models_app import serving
from models_app.exports import export_registered_model

from .test_exports import registered

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_serving():
    serving.reset()
    yield
    serving.reset()


def manifest_of(row) -> dict:
    return json.loads((Path(row.onnx_dir) / "manifest.json").read_text())


def test_a_small_model_is_exported_in_fp32_alone(tmp_path):
    row = export_registered_model(registered(tmp_path, "tiny-small", seed=1).pk)
    manifest = manifest_of(row)
    assert manifest["precisions"] == ["fp32"] and "int8" not in manifest
    assert not any(role.endswith("_int8") for role in manifest["graphs"])


def test_a_model_over_the_threshold_gets_int8_graphs_and_their_measured_difference(tmp_path, monkeypatch):
    monkeypatch.setattr("eqlm.quantize.INT8_ABOVE_PARAMS", 1000)
    row = export_registered_model(registered(tmp_path, "tiny-large", seed=1).pk)
    manifest = manifest_of(row)
    assert manifest["precisions"] == ["fp32", "int8"]
    assert {"embed_int8", "step_int8", "head_int8"} <= set(manifest["graphs"])
    block = manifest["int8"]
    assert 0 <= block["nats_per_token_mean"] <= block["nats_per_token_max"]
    assert block["measured_on"].startswith("held-out English prose")
    assert serving.resolve("tiny-large").runtime("int8").model.precision == "int8"


def test_int8_on_request_re_exports_a_model_exported_without_it(tmp_path):
    row = export_registered_model(registered(tmp_path, "tiny-asked", seed=2).pk)
    assert manifest_of(row)["precisions"] == ["fp32"]
    row = export_registered_model(row.pk, int8=True)
    assert manifest_of(row)["precisions"] == ["fp32", "int8"]
    assert not list(Path(row.onnx_dir).parent.glob("*.partial-*"))
