"""The dial's int8 weights on trained models: the page runs the int8 graphs (onnxruntime-web, in Chromium) and its
greedy tokens are the server's int8 tokens (onnxruntime, /v1 with `precision: "int8"`), at depth 1 and the model's
default, on eqlm-demo (the bundled trained model, its int8 twins added as an export adds them) and on the
programme's reference checkpoint eqlm-postln (GPT-2 BPE, imported and exported with int8)."""

import json
import shutil
from pathlib import Path

import httpx
import pytest
from django.conf import settings as django_settings

from inference.tests.test_demo_browser import PROMPT, generate_in_page
from inference.tests.test_dial_download_browser import open_dial, served_manifest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

REFERENCE = "eqlm-postln"
TOKENS = 24


@pytest.fixture(scope="module")
def trained_int8_models(tmp_path_factory) -> Path:
    """A MODELS_DIR of trained models with int8 graphs: eqlm-demo's committed export with its int8 twins added, and,
    where ../shared is beside the checkout, the programme's eqlm-postln reference exported with int8."""
    from eqlm.export_programme import export_programme_onnx
    from eqlm.programme.checkpoint import load_programme_model
    from eqlm.quantize import add_int8

    committed = Path(django_settings.MODELS_DIR) / "eqlm-demo" / "onnx"
    if not (committed / "manifest.json").exists():
        pytest.skip("the bundled eqlm-demo export is not here")
    root = tmp_path_factory.mktemp("trained-int8")
    shutil.copytree(committed, root / "eqlm-demo" / "onnx")
    add_int8(root / "eqlm-demo" / "onnx")
    checkpoint = Path(django_settings.SHARED_DIR) / "programme-models" / f"{REFERENCE}.pt"
    if checkpoint.exists():
        model, _ = load_programme_model(checkpoint, max_bytes=10**9)
        export_programme_onnx(model, root / REFERENCE / "onnx", model_id=REFERENCE, int8=True)
    return root


def server_greedy(live_server, model: str, depth: int) -> str:
    body = {"model": model, "prompt": PROMPT, "max_tokens": TOKENS, "temperature": 0, "depth": depth}
    response = httpx.post(f"{live_server.url}/v1/completions", json={**body, "precision": "int8"}, timeout=120)
    assert response.status_code == 200, response.text
    return response.json()["choices"][0]["text"]


@pytest.mark.parametrize("model", ["eqlm-demo", REFERENCE])
def test_int8_greedy_in_the_browser_is_the_servers_int8_on_a_trained_model(
    page, live_server, serve_models, trained_int8_models, model
):
    if not (trained_int8_models / model / "onnx" / "manifest.json").exists():
        pytest.skip(f"{model}'s checkpoint is not beside this checkout (../shared/programme-models)")
    serve_models(models_dir=trained_int8_models)
    manifest = served_manifest(live_server, model)
    assert "int8" in manifest["precisions"]
    loading = open_dial(page, f"?model={model}")
    assert loading["precision"] == "int8"  # the dial prefers int8 where the export has it
    default = json.loads((trained_int8_models / model / "onnx" / "manifest.json").read_text())["default_depth"]
    for depth in sorted({1, default}):
        run = generate_in_page(page, depth=depth, max_tokens=TOKENS)
        assert run["requests"] == [] and run["tokens"] == TOKENS  # generated in the page, not on the server
        assert run["text"] == server_greedy(live_server, model, depth), f"{model} at depth {depth}: int8 differs"
    page.watch.assert_clean()
