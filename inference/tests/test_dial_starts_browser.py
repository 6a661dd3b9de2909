"""The dial's start and halting-rule controls in headless Chromium, the run just made from three starts, and the
depth range read from the model's manifest.

The noise start draws the same float32 normals in the page as on the server (eqlm-noise.js, eqlm/noise.py), so a
greedy noise-start run in the page is the API's text, byte for byte.
"""

import shutil

import httpx
import pytest

from .test_demo_browser import PROMPT, generate_in_page, set_control

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def served(serve_models):
    """`served(folder)`: the dial's default model is the export in `folder`, from fresh runtimes."""
    return lambda folder: serve_models(default=folder)


def api_completion(live_server, **body) -> dict:
    body = {"model": "eqlm-demo", "prompt": PROMPT, "temperature": 0, **body}
    return httpx.post(f"{live_server.url}/v1/completions", json=body, timeout=60).json()


def test_a_noise_start_in_the_page_is_the_apis_and_the_run_is_shown_from_three_starts(
    page, live_server, served, tiny_onnx_dir
):
    served(tiny_onnx_dir)
    page.goto("/demo/")
    page.wait_for_selector("body[data-dial-ready=true]", timeout=60_000)
    assert page.locator("#cv-starts-table-wrap").is_hidden()  # no empty table before a run
    page.check("input[name=start][value=noise]")
    set_control(page, "#seed", 4)
    run = generate_in_page(page, depth=6, max_tokens=12)
    assert run["request"]["start"] == "noise" and run["requests"] == []
    api = api_completion(live_server, max_tokens=12, depth=6, start="noise", seed=4)
    assert api["eqlm"]["noise_seed"] == 4 and api["choices"][0]["text"] == run["text"]

    page.wait_for_selector("#cv-starts[data-compared='12']", timeout=60_000)
    headers = page.locator("#cv-starts-table thead th[data-start]")
    assert headers.evaluate_all("ths => ths.map(th => th.dataset.start)") == ["zero", "noise", "warm"]
    assert page.locator("#cv-starts-table thead th.cv-run-start").get_attribute("data-start") == "noise"
    for row in ("agreement", "cosine", "iterations", "text"):
        cells = page.locator(f"#cv-starts-table tr[data-row={row}] td")
        assert cells.count() == 3 and all(text.strip() for text in cells.all_inner_texts())
    starts = page.evaluate("window.eqlmDemo.starts")
    assert starts["zero"]["agreement"] == 1 and starts["zero"]["cosine"] == pytest.approx(1)
    assert starts["noise"]["text"] == run["text"]  # the noise column is the run just made, greedy
    zero = api_completion(live_server, max_tokens=12, depth=6)
    assert starts["zero"]["text"] == zero["choices"][0]["text"]
    same = sum(a == b for a, b in zip(starts["noise"]["tokens"], starts["zero"]["tokens"], strict=True))
    assert starts["noise"]["agreement"] == pytest.approx(same / 12)
    assert -1 <= starts["noise"]["cosine"] < 1  # another start, another point on this random model
    assert all(figures["meanIterations"] == 6 for figures in starts.values())
    page.watch.assert_clean()


def test_kl_halting_in_the_page_halts_where_the_api_does(page, live_server, served, tiny_onnx_dir):
    served(tiny_onnx_dir)
    page.goto("/demo/")
    page.wait_for_selector("body[data-dial-ready=true]", timeout=60_000)
    assert page.locator("input[name=halt][value=kl]").is_disabled()  # a halting rule needs adaptive halting
    page.check("input[name=mode][value=adaptive]")
    page.check("input[name=halt][value=kl]")
    set_control(page, "#tol", -4)
    run = generate_in_page(page, depth=24, max_tokens=10)
    assert (run["request"]["halt"], run["request"]["tol"]) == ("kl", pytest.approx(1e-4))
    api = api_completion(live_server, max_tokens=10, depth=24, tol=run["request"]["tol"], halt="kl")
    assert api["eqlm"]["halt"] == "kl" and api["choices"][0]["text"] == run["text"]
    assert api["eqlm"]["mean_iterations"] == pytest.approx(run["meanIterations"])
    page.watch.assert_clean()


def test_the_depth_slider_takes_its_range_and_default_from_the_manifest(
    page, live_server, served, tiny_onnx_export, tmp_path
):
    folder = served(shutil.copytree(tiny_onnx_export(2, default_depth=12, max_depth=128), tmp_path / "deep"))
    page.goto("/demo/")
    page.wait_for_selector("body[data-dial-ready=true]", timeout=60_000)
    assert page.evaluate("[window.eqlmDemo.runtime.maxDepth, window.eqlmDemo.runtime.defaultDepth]") == [128, 12]
    assert page.locator("#depth").get_attribute("max") == "128" and page.locator("#depth").input_value() == "12"
    run = generate_in_page(page, depth=128, max_tokens=2)
    assert run["meanIterations"] == 128
    api = api_completion(live_server, max_tokens=2, depth=128)
    assert api["choices"][0]["text"] == run["text"] and folder.name == "deep"
    page.watch.assert_clean()
