"""The dial on an explicit transformer in headless Chromium: its depth is fixed at its layer count and the controls
it does not take are disabled with the manifest's note; what it generates in the page is the API's text."""

import shutil

import httpx
import pytest
from django.core.cache import cache

from tests.axe import serious_violations

from .test_demo_browser import PROMPT, generate_in_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LAYERS = 12


@pytest.fixture
def served(settings, tmp_path, tiny_onnx_dir, tiny_explicit_onnx_export):
    from models_app import serving

    shutil.copytree(tiny_onnx_dir, tmp_path / "eqlm-demo" / "onnx")
    shutil.copytree(tiny_explicit_onnx_export(LAYERS), tmp_path / "explicit-demo" / "onnx")
    settings.MODELS_DIR = tmp_path
    serving.reset()
    cache.clear()
    yield tmp_path
    serving.reset()
    cache.clear()


def test_the_dial_fixes_an_explicit_models_depth_and_generates_the_apis_text(page, live_server, served):
    page.goto("/demo/?model=explicit-demo")
    page.wait_for_selector("body[data-dial-ready=true]", timeout=60_000)
    depth = page.locator("#depth")
    assert depth.is_disabled() and depth.input_value() == str(LAYERS)
    assert (depth.get_attribute("min"), depth.get_attribute("max")) == (str(LAYERS), str(LAYERS))
    assert page.locator("input[name=mode][value=adaptive]").is_disabled()
    assert all(radio.is_disabled() for radio in page.locator("input[name=start]").all())
    assert "its depth is its layer count" in page.locator("#controls-note").inner_text().lower()
    assert serious_violations(page) == []

    run = generate_in_page(page, depth=LAYERS, max_tokens=12)
    assert run["requests"] == [] and run["meanIterations"] == LAYERS
    assert run["request"]["start"] is None and run["request"]["tol"] is None
    assert page.locator("#fig-residual").inner_text() == "n/a"
    body = {"model": "explicit-demo", "prompt": PROMPT, "max_tokens": 12, "temperature": 0}
    api = httpx.post(f"{live_server.url}/v1/completions", json=body, timeout=60).json()
    assert api["choices"][0]["text"] == run["text"]
    page.watch.assert_clean()
