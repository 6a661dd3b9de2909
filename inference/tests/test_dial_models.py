"""The dial and the models page address every servable model; graphs are served under content-addressed URLs."""

import hashlib
import json
import re
import shutil

import pytest

from models_app import serving
from models_app.tests.model_pages import every_model_page

pytestmark = pytest.mark.django_db


def page_config(html: str) -> dict:
    return json.loads(re.search(r'<script id="demo-config" type="application/json">(.*?)</script>', html, re.S)[1])


def test_the_dial_offers_every_model_and_defaults_to_eqlm_demo(client, bundled_model_ids):
    html = client.get("/demo/").content.decode()
    options = re.findall(r'<option value="([^"]+)"( selected)?>', html)
    assert "eqlm-demo-unrolled" in bundled_model_ids
    assert [value for value, _ in options] == bundled_model_ids
    assert options[0][1] == " selected"
    config = page_config(html)
    default_depth = serving.resolve("eqlm-demo").manifest["default_depth"]  # whichever model the lead ships
    assert config["model"] == {"id": "eqlm-demo", "defaultDepth": default_depth, "maxDepth": 128}
    assert config["manifestUrl"] == "/demo/models/eqlm-demo/manifest.json"


def test_the_dial_spans_depths_1_to_64_starting_at_the_models_default(client):
    html = client.get("/demo/?model=eqlm-demo-unrolled").content.decode()
    # The depth the page sends (#depth) spans the model's range; the logarithmic slider beside it is a view of it.
    depth = re.search(r'<input type="number" id="depth"[^>]*>', html)[0]
    assert 'min="1"' in depth and 'max="64"' in depth and 'value="8"' in depth
    assert re.search(r'<input type="range" id="depth-slider"[^>]*aria-label="Depth, on a logarithmic scale"', html)


def test_the_dial_spans_depths_1_to_128_for_the_served_model(client):
    html = client.get("/demo/?model=eqlm-demo").content.decode()
    depth = re.search(r'<input type="number" id="depth"[^>]*>', html)[0]
    assert 'min="1"' in depth and 'max="128"' in depth


def test_the_unrolled_models_page_on_the_dial_carries_its_card_and_measured_table(client):
    html = client.get("/demo/?model=eqlm-demo-unrolled").content.decode()
    assert page_config(html)["model"]["id"] == "eqlm-demo-unrolled"
    card = html[html.index('id="model-card"') :]
    assert "collapses past 12" in card
    for cell in ("2.1835", "4.0199", "31.67%", "5.6476"):  # generated: models_app/tests/test_card_evaluation.py
        assert f'<td class="num">{cell}</td>' in card


def test_an_unknown_model_on_the_dial_is_a_404(client):
    assert client.get("/demo/?model=gpt-4").status_code == 404


def test_the_quality_download_follows_the_selected_model(client):
    data = client.get("/demo/quality.json?model=eqlm-demo-unrolled").json()
    assert data["model"] == "eqlm-demo-unrolled" and data["rows"][7]["held_out_bits_per_byte"] == 2.1835
    response = client.get("/demo/quality.csv?model=eqlm-demo-unrolled")
    assert 'filename="eqlm-demo-unrolled-quality-by-depth.csv"' in response["Content-Disposition"]


def test_the_manifest_names_each_graph_by_a_url_carrying_its_sha256(client):
    response = client.get("/demo/models/eqlm-demo-unrolled/manifest.json")
    assert response.status_code == 200 and response["Cache-Control"] == "no-cache" and response["ETag"]
    manifest = response.json()
    assert manifest["model_id"] == "eqlm-demo-unrolled" and manifest["max_depth"] == 64
    assert set(manifest["graph_urls"]) == {"embed", "step", "head", "step_batched"}  # step_batched: the batched step
    for role, url in manifest["graph_urls"].items():
        assert url == f"/demo/models/eqlm-demo-unrolled/graphs/{manifest['graph_sha256'][role]}.onnx"
        graph = client.get(url)
        assert graph.status_code == 200 and graph["Cache-Control"] == "public, max-age=31536000, immutable"
        assert hashlib.sha256(b"".join(graph.streaming_content)).hexdigest() == manifest["graph_sha256"][role]
    again = client.get("/demo/models/eqlm-demo-unrolled/manifest.json", HTTP_IF_NONE_MATCH=response["ETag"])
    assert again.status_code == 304


def test_a_graph_url_of_a_replaced_export_is_gone_and_the_new_manifest_names_new_urls(
    client, serve_models, tmp_path, tiny_onnx_export
):
    shutil.copytree(tiny_onnx_export(0), tmp_path / "eqlm-demo" / "onnx")
    serve_models(tmp_path)
    old = client.get("/demo/models/eqlm-demo/manifest.json")
    shutil.rmtree(tmp_path / "eqlm-demo")
    shutil.copytree(tiny_onnx_export(1), tmp_path / "eqlm-demo" / "onnx")
    new = client.get("/demo/models/eqlm-demo/manifest.json", HTTP_IF_NONE_MATCH=old["ETag"])
    assert new.status_code == 200 and new["ETag"] != old["ETag"]
    step_old, step_new = old.json()["graph_urls"]["step"], new.json()["graph_urls"]["step"]
    assert step_old != step_new
    assert client.get(step_old).status_code == 404 and client.get(step_new).status_code == 200


def test_model_files_of_an_unknown_model_or_hash_are_404s(client):
    assert client.get("/demo/models/nope/manifest.json").status_code == 404
    assert client.get(f"/demo/models/eqlm-demo/graphs/{'0' * 64}.onnx").status_code == 404
    assert client.get("/demo/models/eqlm-demo/graphs/step.onnx").status_code == 404


def test_the_models_page_shows_each_bundled_model_with_its_card(client, bundled_model_ids):
    html = every_model_page(client)
    assert 'id="local-demo"' in html and 'id="local-eqlm-demo-unrolled"' in html
    for model_id in bundled_model_ids[1:]:
        assert f'id="local-{model_id}"' in html and f'href="/demo/?model={model_id}"' in html
    unrolled = html[html.index('id="local-eqlm-demo-unrolled"') :]
    assert "collapses past 12" in unrolled and 'id="eqlm-demo-unrolled-card-table"' in unrolled
    assert 'href="/demo/?model=eqlm-demo-unrolled"' in unrolled
    assert client.get("/models/eqlm-demo-unrolled/bpb.json").json()["rows"][7]["held_out_bits_per_byte"] == 2.1835


def test_the_admin_lists_each_registered_models_serving_state(staff_client):
    from models_app.seed import seed

    seed()
    serving.reset()
    serving.resolve("eqlm-demo-unrolled").runtime()
    html = staff_client.get("/admin/inference/registeredmodel/").content.decode()
    rows = {slug: html[html.index(f">{slug}<") :][:400] for slug in ("eqlm-demo", "eqlm-demo-unrolled")}
    assert "loaded" in rows["eqlm-demo-unrolled"] and "not loaded" not in rows["eqlm-demo-unrolled"]
    assert "not loaded" in rows["eqlm-demo"]
    serving.reset()
