"""The depth dial's download in headless Chromium: the model's files stream in with progress, are kept in the
browser's Cache Storage by sha256 (a second visit fetches none of them), run as int8 when the export has int8 graphs,
and a model the device cannot hold is offered on the server instead (/v1, streamed). Then the programme's full-size
random-weight anytime model (120.7M parameters) loads and generates in the page."""

import json
import os
import shutil
import time
from pathlib import Path

import httpx
import pytest

from conftest import CHROMIUM, CHROMIUM_ARGS, PageWatch
from inference.tests.test_demo_browser import PROMPT, dial_model, dial_model_dir, generate_in_page

__all__ = ["dial_model", "dial_model_dir"]  # fixtures used here, defined beside the dial's other browser tests

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GRAPHS = "/graphs/"  # the content-addressed URLs of a model's graphs and external data (inference:model-graph)
FULL_SIZE = "anytime-full-size"


def open_dial(page, query: str = "", *, ready: bool = True, timeout: int = 60_000) -> dict:
    page.goto(f"/demo/{query}")
    page.wait_for_selector(f"body[data-dial-ready={str(ready).lower()}]", timeout=timeout)
    return page.evaluate("window.eqlmDemo.loading")


def graph_requests(page, since: int = 0) -> list[str]:
    return [url for url in page.watch.requests[since:] if GRAPHS in url]


def served_manifest(live_server, model: str = "eqlm-demo") -> dict:
    return httpx.get(f"{live_server.url}/demo/models/{model}/manifest.json", timeout=30).json()


def dial_roles(manifest: dict) -> set[str]:
    """The graphs the dial loads: every served one but the batched step, which only the server's batches run."""
    return {role for role in manifest["graph_urls"] if not role.startswith("step_batched")}


def test_a_second_visit_reads_the_graphs_from_the_browsers_cache(page, live_server, dial_model):
    manifest = served_manifest(live_server)
    files = dial_roles(manifest)
    first = open_dial(page)
    assert first["fromCache"] == [] and set(first["files"]) == files
    assert len(graph_requests(page)) == len(files)  # each file fetched once
    text = generate_in_page(page, depth=4, max_tokens=12)["text"]

    before = len(page.watch.requests)
    second = open_dial(page)
    assert graph_requests(page, before) == []  # no network fetch of any graph or data file the second time
    assert sorted(second["fromCache"]) == sorted(second["files"]) == sorted(files)
    assert "from this browser's cache" in page.locator("#runtime-status").inner_text()
    assert generate_in_page(page, depth=4, max_tokens=12)["text"] == text
    page.watch.assert_clean()


def test_a_new_export_of_a_model_replaces_its_files_in_the_cache(page, live_server, serve_models, tiny_onnx_export):
    cached = "async () => { const c = await caches.open('eqlm-model-files-v1');"
    cached += " return (await c.keys()).map((r) => r.url.split('/').pop()); }"
    serve_models(default=tiny_onnx_export(0))
    old = set(open_dial(page) and page.evaluate(cached))
    serve_models(default=tiny_onnx_export(1))  # the same model id, exported again from other weights
    loading = open_dial(page)
    assert loading["fromCache"] == []  # nothing of the old export is reused
    new = set(page.evaluate(cached))
    manifest = served_manifest(live_server)
    assert {manifest["graph_sha256"][role] for role in dial_roles(manifest)} <= new
    assert old & new == {"eqlm-demo"}  # the old export's files are gone; only the model's list of its files stays


def test_the_download_shows_its_progress_in_bytes_as_they_arrive(page, live_server, dial_model):
    manifest = served_manifest(live_server)
    total = sum(manifest["graph_bytes"][role] for role in dial_roles(manifest))
    cdp = page.context.new_cdp_session(page)  # a slow line (Chromium's own throttling), so the bytes arrive in steps
    cdp.send("Network.enable")
    cdp.send(
        "Network.emulateNetworkConditions",
        {"offline": False, "latency": 20, "downloadThroughput": 2_000_000, "uploadThroughput": -1},
    )
    page.goto("/demo/", wait_until="commit", timeout=120_000)
    seen = set()  # the bar's values while the files arrive (polled: the page's CSP refuses wait_for_function)
    poll = (
        "(() => { const bar = document.getElementById('download-progress');"
        " return [document.body && document.body.dataset.dialReady, bar ? bar.value : 0]; })()"
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, value = page.evaluate(poll)
        seen.add(value)
        if ready is not None:
            break
        time.sleep(0.02)
    assert [value for value in seen if 0 < value < total], f"no partial progress shown: {sorted(seen)}"
    assert page.locator("#download-progress").get_attribute("max") == str(total)
    assert " of 0." in page.locator("#download-text").inner_text()  # "x MB of y MB"
    page.wait_for_selector("body[data-dial-ready=true]", timeout=120_000)
    download = page.evaluate("window.eqlmDemo.download")  # the last progress shown: every byte, none cached
    assert download["loaded"] == download["total"] == total and download["cached"] == 0
    assert download["steps"] > len(dial_roles(manifest))  # as chunks arrive, not per file
    assert page.locator("#download").is_hidden()  # gone once the model is loaded


def test_a_model_the_device_cannot_hold_is_offered_on_the_server_streamed(page, live_server, dial_model, settings):
    settings.DIAL_BROWSER_MEMORY_MB = 1  # the device limit the page applies (the dial model needs more)
    loading = open_dial(page, ready=False)
    assert loading["neededBytes"] > loading["limitBytes"] == 1_000_000
    assert graph_requests(page) == []  # nothing downloaded that could not be held
    fallback = page.locator("#server-fallback")
    assert fallback.is_visible() and "eqlm-demo cannot run in this browser" in fallback.inner_text()
    assert "1 MB" in page.locator("#server-fallback-why").inner_text()

    run = generate_in_page(page, depth=4, max_tokens=16)  # the same button, now on the server
    assert run["where"] == "server" and run["tokens"] == 16
    assert any(url.endswith("/v1/completions") for url in run["requests"])
    api = httpx.post(
        f"{live_server.url}/v1/completions",
        json={"model": "eqlm-demo", "prompt": PROMPT, "max_tokens": 16, "temperature": 0, "depth": 4},
        timeout=60,
    ).json()
    assert run["text"] == api["choices"][0]["text"]
    assert page.locator("#fig-tps").inner_text() not in ("", "—")
    page.watch.assert_clean()


def test_greedy_in_the_browser_is_the_servers_at_the_precision_the_page_runs(page, live_server, dial_model):
    precision = open_dial(page)["precision"]  # int8 when the export has it (the dial prefers it), else fp32
    assert precision == ("int8" if "int8" in served_manifest(live_server).get("precisions", []) else "fp32")
    for depth in (1, 12):
        run = generate_in_page(page, depth=depth, max_tokens=24)
        body = {"model": "eqlm-demo", "prompt": PROMPT, "max_tokens": 24, "temperature": 0, "depth": depth}
        if precision != "fp32":
            body["precision"] = precision
        api = httpx.post(f"{live_server.url}/v1/completions", json=body, timeout=60).json()
        assert api["choices"][0]["text"] == run["text"], f"depth {depth} ({precision}): browser and server differ"
    page.watch.assert_clean()


def test_a_graph_the_browser_cannot_open_offers_the_server(page, live_server, serve_models, dial_model_dir, tmp_path):
    broken = tmp_path / "onnx"
    shutil.copytree(dial_model_dir, broken)
    manifest = json.loads((broken / "manifest.json").read_text())
    manifest.pop("graph_sha256", None)  # served as it is: the browser, not the server, finds it unreadable
    (broken / "manifest.json").write_text(json.dumps(manifest))
    step = broken / manifest["graphs"]["step"]
    step.write_bytes(step.read_bytes()[: step.stat().st_size // 2])
    serve_models(default=broken)
    loading = open_dial(page, ready=False)
    assert "could not create its sessions" in loading["cannotHold"]
    assert page.locator("#server-fallback").is_visible()
    assert page.locator("#generate").inner_text() == "Generate on the server" and page.locator("#generate").is_enabled()


# --- the programme's model at full size --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def full_size_models(tmp_path_factory) -> Path:
    """A MODELS_DIR holding the full-size random-weight anytime model (eqlm.programme.config's published shape, seed
    0), saved in the programme's format, read back and exported as the portal exports an imported one; once a run."""
    import torch

    from eqlm.export_programme import export_programme_onnx
    from eqlm.programme.checkpoint import load_programme_model, save_programme_checkpoint
    from eqlm.programme.config import PUBLISHED_SIZES, published_config
    from eqlm.programme.model import build_programme_model

    root = tmp_path_factory.mktemp("full-size-models")
    model_class, _, n_layers, params = PUBLISHED_SIZES["anytime"]
    torch.manual_seed(0)
    built = build_programme_model(published_config("anytime"), model_class, n_layers)
    assert built.num_params() == params
    path = save_programme_checkpoint(built, root / "anytime.pt")
    del built
    model, _ = load_programme_model(path, max_bytes=2 * 1024**3)
    path.unlink()
    export_programme_onnx(model, root / FULL_SIZE / "onnx", model_id=FULL_SIZE)
    return root


@pytest.fixture
def profile_page(browser, live_server, tmp_path):
    """A tab of a browser profile on disk: a reader's Cache Storage quota is a share of the disk, where the `page`
    fixture's incognito context keeps storage in memory under a small quota that hundreds of MB exceed."""
    context = browser.browser_type.launch_persistent_context(
        tmp_path / "profile", executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True, base_url=live_server.url
    )
    tab = context.pages[0] if context.pages else context.new_page()
    tab.set_default_timeout(600_000)  # the first visit downloads hundreds of MB
    tab.watch = PageWatch(tab)
    yield tab
    context.close()


@pytest.mark.slow
def test_the_full_size_anytime_model_loads_from_cache_and_generates_at_depths_1_to_12(
    profile_page, live_server, serve_models, dial_model_dir, full_size_models
):
    page = profile_page
    serve_models(models_dir=full_size_models, default=dial_model_dir)
    manifest = served_manifest(live_server, FULL_SIZE)
    first = open_dial(page, f"?model={FULL_SIZE}", timeout=900_000)
    assert first["precision"] == ("int8" if "int8" in manifest.get("precisions", []) else "fp32")
    assert first["fromCache"] == first["notCached"] == [] and first["downloadBytes"] == sum(
        manifest["graph_bytes"][key] for key in first["files"]
    )
    before = len(page.watch.requests)
    second = open_dial(page, f"?model={FULL_SIZE}", timeout=900_000)
    assert graph_requests(page, before) == [] and sorted(second["fromCache"]) == sorted(second["files"])

    figures = {"precision": first["precision"], "download_mb": round(first["downloadBytes"] / 1e6, 1)}
    figures["first_visit_ready_s"] = round(first["readyMs"] / 1000, 1)
    figures["first_visit_fetch_s"] = round(first["fetchMs"] / 1000, 1)
    figures["second_visit_ready_s"] = round(second["readyMs"] / 1000, 1)
    figures["second_visit_fetch_s"] = round(second["fetchMs"] / 1000, 1)
    for depth in (1, 4, 12):
        run = generate_in_page(page, depth=depth, max_tokens=8)
        assert run["tokens"] == 8 and run["meanIterations"] == depth and run["requests"] == []
        figures[f"tokens_per_s_depth{depth}"] = round(run["tokensPerSecond"], 2)
    figures["load"] = [round(x, 2) for x in os.getloadavg()]
    figures["at"] = time.strftime("%H:%M:%S")
    print("full-size dial:", json.dumps(figures))  # the figures the closing note reports (no timing asserts)
    page.watch.assert_clean()
