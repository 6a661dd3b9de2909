"""The serving layer: several models by id, loaded lazily and once, reloaded when their export changes, states."""

import json
import shutil
import threading

import pytest

from eqlm.generation import GenerationRequest
from models_app import serving

GREEDY = GenerationRequest(prompt="In the beginning", max_tokens=12, depth=4)


@pytest.fixture(scope="module")
def exports(tiny_onnx_export):
    """Two tiny models with different weights (exported once for the test run)."""
    return {seed: tiny_onnx_export(seed) for seed in (0, 1)}


@pytest.fixture
def models_dir(tmp_path, serve_models, exports):
    """A MODELS_DIR with the default model (seed 0) and `tiny-other` (seed 1); fresh runtimes for each test."""
    root = tmp_path / "models"
    shutil.copytree(exports[0], root / "eqlm-demo" / "onnx")
    shutil.copytree(exports[1], root / "tiny-other" / "onnx")
    return serve_models(root)


def test_every_bundled_folder_is_a_model_addressed_by_its_folder_name(models_dir):
    assert list(serving.model_cards()) == ["eqlm-demo", "tiny-other"]
    card = serving.resolve("tiny-other")
    runtime = card.runtime()
    assert card.onnx_dir == models_dir / "tiny-other" / "onnx" and runtime.model_id == "tiny-other"


def test_each_model_generates_with_its_own_weights(models_dir):
    default = serving.resolve("eqlm-demo").runtime()
    other = serving.resolve("tiny-other").runtime()
    assert default.generate(GREEDY).text != other.generate(GREEDY).text


def test_the_default_model_is_what_an_empty_id_gives_and_a_suffix_names_its_base(models_dir):
    assert serving.resolve().runtime() is serving.resolve(None).runtime() is serving.resolve("eqlm-demo").runtime()
    assert serving.resolve("tiny-other@depth=12") == serving.resolve("tiny-other")


def test_an_unknown_id_is_refused_naming_the_available_ones(models_dir):
    with pytest.raises(serving.UnknownModel, match="Available: eqlm-demo, tiny-other"):
        serving.resolve("gpt-4")


def test_resolving_a_model_reads_that_models_folder_alone_and_gives_the_card_the_listing_gives(models_dir, monkeypatch):
    listed = serving.model_cards()
    read = []
    real = serving.read_card
    monkeypatch.setattr(serving, "read_card", lambda model_id, *args: read.append(model_id) or real(model_id, *args))
    assert serving.resolve("tiny-other") == listed["tiny-other"]
    assert serving.resolve() == listed["eqlm-demo"]
    assert read == ["tiny-other", "eqlm-demo"]


def test_an_id_that_is_a_path_or_too_long_a_name_names_no_folder(models_dir):
    (models_dir / "nested" / "inner" / "onnx").mkdir(parents=True)
    shutil.copytree(models_dir / "tiny-other" / "onnx", models_dir / "nested" / "inner" / "onnx", dirs_exist_ok=True)
    for model_id in ("nested/inner", "../models/tiny-other", ".", "..", "x" * 300):
        with pytest.raises(serving.UnknownModel):
            serving.resolve(model_id)


def test_models_load_lazily_and_report_their_state(models_dir):
    states = {s["id"]: s["state"] for s in serving.model_states()}
    assert states == {"eqlm-demo": "not loaded", "tiny-other": "not loaded"}
    serving.resolve("tiny-other").runtime()
    states = {s["id"]: s["state"] for s in serving.model_states()}
    assert states == {"eqlm-demo": "not loaded", "tiny-other": "loaded"}


def test_concurrent_first_requests_share_one_runtime(models_dir):
    seen, barrier = [], threading.Barrier(6)

    def ask():
        barrier.wait()
        seen.append(serving.resolve("tiny-other").runtime())

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 6 and len({id(runtime) for runtime in seen}) == 1


def test_a_new_export_in_the_same_folder_is_served_instead_of_the_old_one(models_dir, exports):
    before = serving.resolve("tiny-other").runtime().generate(GREEDY).text
    shutil.rmtree(models_dir / "tiny-other" / "onnx")
    shutil.copytree(exports[0], models_dir / "tiny-other" / "onnx")
    runtime = serving.resolve("tiny-other").runtime()
    assert runtime.generate(GREEDY).text != before
    assert runtime.generate(GREEDY).text == serving.resolve("eqlm-demo").runtime().generate(GREEDY).text


def test_a_graph_that_does_not_match_its_manifest_fails_with_the_reason(models_dir):
    manifest = json.loads((models_dir / "tiny-other" / "onnx" / "manifest.json").read_text())
    manifest["graph_sha256"]["step"] = "0" * 64
    (models_dir / "tiny-other" / "onnx" / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(serving.ModelUnavailable, match="step graph does not match"):
        serving.resolve("tiny-other").runtime()
    state = next(s for s in serving.model_states() if s["id"] == "tiny-other")
    assert state["state"] == "failed" and "does not match" in state["error"]


def test_a_graph_onnxruntime_cannot_read_fails_once_and_the_others_still_serve(models_dir):
    (models_dir / "tiny-other" / "onnx" / "step.onnx").write_bytes(b"not an onnx graph")
    manifest = json.loads((models_dir / "tiny-other" / "onnx" / "manifest.json").read_text())
    del manifest["graph_sha256"]
    (models_dir / "tiny-other" / "onnx" / "manifest.json").write_text(json.dumps(manifest))
    assert serving.warm_up_all() == {"eqlm-demo": "loaded", "tiny-other": "failed"}
    state = next(s for s in serving.model_states() if s["id"] == "tiny-other")
    assert state["state"] == "failed" and state["error"]
    assert serving.resolve("eqlm-demo").runtime().generate(GREEDY).completion_tokens == 12


def test_a_missing_default_model_is_listed_as_failed_and_resolving_it_says_why(models_dir, settings, tmp_path):
    settings.DEFAULT_MODEL = "nowhere"
    shutil.rmtree(models_dir / "eqlm-demo")
    state = serving.model_states()[0]
    assert state["id"] == "eqlm-demo" and state["state"] == "failed" and "nowhere" in state["error"]
    with pytest.raises(serving.UnknownModel, match="no manifest.json"):
        serving.resolve()


@pytest.mark.django_db
def test_a_registry_row_with_an_onnx_folder_is_served_under_its_slug(models_dir, exports):
    from models_app.models import RegisteredModel

    RegisteredModel.objects.create(slug="uploaded-tiny", name="Uploaded tiny", model_class="EqLM",
                                   sha256="x", onnx_dir=str(exports[1]))  # fmt: skip
    card = serving.resolve("uploaded-tiny")
    runtime = card.runtime()
    assert card.source == "registry" and card.name == "Uploaded tiny"
    assert runtime.generate(GREEDY).text == serving.resolve("tiny-other").runtime().generate(GREEDY).text


def test_depth_64_is_accepted_and_65_refused(models_dir):
    runtime = serving.resolve().runtime()
    assert runtime.generate(GenerationRequest(prompt="a", max_tokens=2, depth=64)).completion_tokens == 2
    with pytest.raises(ValueError, match="between 1 and 64"):
        runtime.generate(GenerationRequest(prompt="a", max_tokens=2, depth=65))
