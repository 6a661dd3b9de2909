"""The depth dial in headless Chromium: generation runs in the page (onnxruntime-web), never on the server.

Uses the committed demo model when it is installed, otherwise a tiny random model exported by the project's own
export code (served from models/eqlm-demo/onnx/ through the demo's model-file view).
"""

import json
from pathlib import Path

import httpx
import pytest
from django.conf import settings as django_settings

from tests.axe import serious_violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PROMPT = "And God said"
GENERATION_ROUTES = ("/v1/", "/api/")


@pytest.fixture(scope="module")
def dial_model_dir(request):
    committed = Path(django_settings.MODELS_DIR) / "eqlm-demo" / "onnx"
    if (committed / "manifest.json").exists():
        return committed
    return request.getfixturevalue("tiny_onnx_dir")


@pytest.fixture
def dial_model(serve_models, dial_model_dir):
    return serve_models(default=dial_model_dir)


def set_control(page, selector: str, value) -> None:
    page.locator(selector).evaluate(
        "(el, v) => { el.value = v; el.dispatchEvent(new Event('input', {bubbles: true})); }", str(value)
    )


def generate_in_page(page, depth: int, max_tokens: int) -> dict:
    set_control(page, "#depth", depth)
    set_control(page, "#max-tokens", max_tokens)
    set_control(page, "#temperature", 0)
    page.fill("#prompt", PROMPT)
    before = len(page.watch.requests)
    page.click("#generate")
    page.wait_for_selector("#output[data-state=done]", timeout=60_000)
    during = page.watch.requests[before:]
    run = page.evaluate("window.eqlmDemo.lastRun")
    run["requests"] = during
    return run


def test_the_dial_generates_at_depths_4_and_12_in_the_page_without_server_generation(page, live_server, dial_model):
    response = page.goto("/demo/")
    assert response.headers["cross-origin-embedder-policy"] == "require-corp"
    assert "'wasm-unsafe-eval'" in response.headers["content-security-policy"]
    page.wait_for_selector("body[data-dial-ready=true]", timeout=60_000)
    assert page.evaluate("window.crossOriginIsolated") is True
    assert page.locator("#fig-threads").inner_text().startswith("2")

    for depth in (4, 12):
        run = generate_in_page(page, depth, max_tokens=24)
        assert run["tokens"] == 24 and run["text"]
        assert run["meanIterations"] == depth
        assert not [url for url in run["requests"] if any(route in url for route in GENERATION_ROUTES)]
        assert run["requests"] == []  # nothing at all: the model and runtime were fetched when the page loaded
        assert page.locator("#output .tok").count() > 0
        assert page.locator("#fig-tps").inner_text() not in ("", "—")

        # Greedy at the same depth: the browser's text is the API's text.
        api = httpx.post(
            f"{live_server.url}/v1/completions",
            json={"model": "eqlm-demo", "prompt": PROMPT, "max_tokens": 24, "temperature": 0, "depth": depth},
            timeout=60,
        ).json()
        assert api["choices"][0]["text"] == run["text"], f"depth {depth}: browser and API differ"
        assert api["eqlm"]["iterations_per_token"] == [depth] * 24
    page.watch.assert_clean()


def without_isolation_headers(route):
    response = route.fetch()
    headers = {k: v for k, v in response.headers.items() if not k.lower().startswith("cross-origin-")}
    route.fulfill(response=response, headers=headers)


def test_without_cross_origin_isolation_the_dial_runs_on_one_thread_with_adaptive_halting(page, dial_model):
    page.route("**/demo/", without_isolation_headers)
    page.goto("/demo/")
    page.wait_for_selector("body[data-dial-ready=true]", timeout=60_000)
    assert page.evaluate("window.crossOriginIsolated") is False
    assert page.locator("#fig-threads").inner_text().startswith("1")
    assert serious_violations(page) == []
    page.check("input[name=mode][value=adaptive]")
    set_control(page, "#tol", -0.5)  # tolerance 10^-0.5: loose, so positions halt early
    run = generate_in_page(page, depth=12, max_tokens=8)
    assert run["request"]["tol"] == pytest.approx(10**-0.5)
    assert 1 <= run["meanIterations"] < 12
    page.watch.assert_clean()


def test_the_page_says_so_when_webassembly_is_unavailable(page, dial_model):
    page.add_init_script("delete window.WebAssembly;")
    page.goto("/demo/")
    page.wait_for_selector("#wasm-missing:not([hidden])")
    assert "WebAssembly" in page.locator("#runtime-status").inner_text()
    assert page.locator("#generate").is_disabled()


def test_the_quality_chart_has_a_table_and_downloads(client, settings):
    response = client.get("/demo/")
    assert response.status_code == 200
    body = response.content.decode()
    assert 'href="/findings/F24/"' in body and 'href="/findings/F44/"' in body
    assert "small local demo model" in body
    config = json.loads(body.split('id="demo-config" type="application/json">', 1)[1].split("</script>", 1)[0])
    rows = client.get("/demo/quality.json").json()["rows"]
    assert config["quality"] == rows
    csv = client.get("/demo/quality.csv")
    assert csv["Content-Type"].startswith("text/csv")
    assert csv.content.decode().splitlines()[0] == "depth,held_out_bits_per_byte,blimp_accuracy"
    if rows:
        assert 'id="quality-table"' in body and len(csv.content.decode().splitlines()) == len(rows) + 1


def test_the_model_select_switches_to_the_unrolled_model_and_depth_64_matches_the_api(page, live_server, dial_model):
    page.goto("/demo/")
    page.wait_for_selector("body[data-dial-ready=true]", timeout=60_000)
    with page.expect_navigation():
        page.select_option("#model", "eqlm-demo-unrolled")
    page.wait_for_selector("body[data-dial-ready=true]", timeout=60_000)
    assert page.evaluate("window.eqlmDemo.runtime.modelId") == "eqlm-demo-unrolled"
    graph_urls = [url for url in page.watch.requests if "/graphs/" in url]
    assert len(graph_urls) >= 3 and all(url.endswith(".onnx") and "/eqlm-demo-unrolled/graphs/" in url
                                        for url in graph_urls[-3:])  # fmt: skip
    assert page.locator("#depth").get_attribute("max") == "64"

    run = generate_in_page(page, 64, max_tokens=6)
    assert run["meanIterations"] == 64 and run["requests"] == []
    api = httpx.post(
        f"{live_server.url}/v1/completions",
        json={"model": "eqlm-demo-unrolled", "prompt": PROMPT, "max_tokens": 6, "temperature": 0, "depth": 64},
        timeout=60,
    ).json()
    assert api["model"] == "eqlm-demo-unrolled" and api["choices"][0]["text"] == run["text"]

    refused = page.evaluate(
        "async () => { try { for await (const _ of window.eqlmDemo.runtime.generate({prompt: 'a', depth: 65})) {} "
        "return 'ran'; } catch (e) { return String(e.message); } }"
    )
    assert refused == "depth must be between 1 and 64"
    set_control(page, "#depth", 65)  # the slider itself stops at its max
    assert page.locator("#depth").input_value() == "64"
    page.watch.assert_clean()


def test_the_dial_samples_by_default_switches_to_greedy_in_one_click_and_shows_output_beside_generate(page, dial_model):
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto("/demo/")
    page.wait_for_selector("body[data-dial-ready=true]", timeout=60_000)
    generate, output = page.locator("#generate").bounding_box(), page.locator("#output").bounding_box()
    assert output["x"] > generate["x"] + generate["width"]  # beside the controls
    assert abs(output["y"] - generate["y"]) < 800  # one screen holds both
    set_control(page, "#max-tokens", 8)
    page.click("#generate")
    page.wait_for_selector("#output[data-state=done]", timeout=60_000)
    request = page.evaluate("window.eqlmDemo.lastRun.request")
    assert (request["temperature"], request["topP"]) == (0.8, 0.9)
    page.click("#greedy")
    assert page.inner_text("#sampling-mode").startswith("Greedy")
    page.click("#generate")
    page.wait_for_selector("#output[data-state=done]", timeout=60_000)
    assert page.evaluate("window.eqlmDemo.lastRun.request.temperature") == 0
    page.click("#sampled")
    assert page.eval_on_selector("#temperature", "n => n.value") == "0.8"
    page.watch.assert_clean()
