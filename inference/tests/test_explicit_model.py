"""The explicit baseline (`explicit-demo`) is served like the other bundled models once its checkpoint is there:
`export_onnx --model-id explicit-demo` exports it (one graph per layer) and measures it, the seed registers it,
/v1/models lists it with its depth fixed at its layer count, /v1/completions decodes it at that depth, the dial fixes
its controls and /models/ shows its card, with convergence figures that do not apply said so rather than faked.

A tiny random explicit transformer of 12 layers stands in for the trained one; no Django settings are left changed.
Slow: the export measures it on the whole held-out slice of the corpus, as it measures the real one.
"""

import io
import json
import re
import shutil
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.test import override_settings

from eqlm.checkpoint import save_checkpoint
from eqlm.testing import tiny_explicit_model
from models_app.tests.model_pages import every_model_page

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

LAYERS = 12
PROMPT = "In the beginning"
CARD = Path(django_settings.BASE_DIR) / "models" / "explicit-demo" / "card.json"


@pytest.fixture(scope="module")
def bundled(tmp_path_factory, tiny_onnx_dir):
    """A models folder with eqlm-demo (its export, no checkpoint) and explicit-demo's checkpoint and hand-written
    card; `export_onnx --model-id explicit-demo` then writes the rest."""
    root = tmp_path_factory.mktemp("explicit-bundled")
    models = root / "models"
    demo = models / "explicit-demo"
    demo.mkdir(parents=True)
    shutil.copytree(tiny_onnx_dir, models / "eqlm-demo" / "onnx")
    provenance = {"recipe": "explicit-demo", "stage": "explicit", "seed": 42, "steps": 2, "tokens": 512}
    save_checkpoint(tiny_explicit_model(seed=3, n_layers=LAYERS), demo / "checkpoint.pt", provenance)
    shutil.copy(CARD, demo / "card.json")
    # the committed slice, measured when the corpus cannot be read (the export rewrites it from the corpus otherwise)
    shutil.copy(CARD.parent / "heldout_slice.txt", demo / "heldout_slice.txt")
    paths = {"MODELS_DIR": models}
    with override_settings(**paths):
        out = io.StringIO()
        call_command("export_onnx", "--model-id", "explicit-demo", stdout=out)
    return {"demo": demo, "models": models, "paths": paths, "log": out.getvalue()}


@pytest.fixture
def served(bundled, settings, serve_models):
    for key, value in bundled["paths"].items():
        setattr(settings, key, value)
    serve_models(bundled["models"])
    return bundled


def complete(client, **body):
    body = {"model": "explicit-demo", "prompt": PROMPT, "max_tokens": 6, "temperature": 0, **body}
    response = client.post("/v1/completions", json.dumps(body), content_type="application/json")
    return response.status_code, response.json()


def test_the_export_writes_one_graph_per_layer_its_metrics_and_its_facts(bundled):
    folder, demo = bundled["models"] / "explicit-demo" / "onnx", bundled["demo"]
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["model_class"] == "ExplicitLM" and len(manifest["layers"]) == LAYERS
    assert all((folder / manifest["graphs"][role]).is_file() for role in manifest["layers"])
    assert (manifest["min_depth"], manifest["default_depth"], manifest["max_depth"]) == (LAYERS, LAYERS, LAYERS)
    metrics = json.loads((demo / "metrics.json").read_text())
    assert metrics["model_class"] == "ExplicitLM" and list(metrics["ci_slice"]["bits_per_byte"]) == [str(LAYERS)]
    assert "not an equilibrium model" in metrics["limitations"]
    evaluation = json.loads((demo / "facts.json").read_text())["evaluation"]
    assert evaluation["sources"]["local"] is None and "do not apply" in evaluation["not_applicable"]
    assert evaluation["figures"]["layers"]["value"] == LAYERS
    assert not any(name.startswith(("converged", "halting", "drift")) for name in evaluation["figures"])


def test_the_seed_registers_it_once_its_checkpoint_and_metrics_are_there(served):
    from models_app.bundled import register_bundled_models
    from models_app.models import RegisteredModel

    assert "explicit-demo" in [row.slug for row, _ in register_bundled_models()]
    row = RegisteredModel.objects.get(slug="explicit-demo")
    assert row.model_class == "ExplicitLM" and row.onnx_dir.endswith("explicit-demo/onnx")
    assert [row.slug for row, created in register_bundled_models() if created] == []  # idempotent


def test_v1_models_lists_it_with_its_depth_fixed_at_its_layer_count(client, served):
    listed = {m["id"]: m for m in client.get("/v1/models").json()["data"]}
    eqlm = listed["explicit-demo"]["eqlm"]
    assert eqlm["model_class"] == "ExplicitLM" and eqlm["default_depth"] == eqlm["max_depth"] == LAYERS
    controls = eqlm["controls"]
    assert (controls["min_depth"], controls["max_depth"], controls["default_depth"]) == (LAYERS, LAYERS, LAYERS)
    assert (controls["solvers"], controls["starts"], controls["halts"], controls["tol"]) == (["picard"], [], [], False)
    assert "layer count" in controls["note"]
    assert listed["eqlm-demo"]["eqlm"]["controls"]["starts"] == ["zero", "warm", "noise"]


def test_a_completion_runs_every_layer_once_and_reports_no_residual(client, served):
    from eqlm.generation import GenerationRequest, Generator

    direct = Generator(served["models"] / "explicit-demo" / "onnx").generate(GenerationRequest(PROMPT, max_tokens=6))
    for body in ({}, {"depth": LAYERS}, {"solver": "picard"}):
        status, answer = complete(client, **body)
        assert status == 200, answer
        assert answer["choices"][0]["text"] == direct.text
        eqlm = answer["eqlm"]
        assert eqlm["iterations_per_token"] == [LAYERS] * 6 and eqlm["mode"] == "fixed"
        assert eqlm["final_residual"] is None and eqlm["start"] is None and eqlm["warm_start"] is None
    response = client.post(
        "/v1/chat/completions",
        json.dumps({"model": "explicit-demo", "messages": [{"role": "user", "content": PROMPT}], "max_tokens": 3}),
        content_type="application/json",
    )
    status, chat = response.status_code, response.json()
    assert status == 200 and chat["eqlm"]["iterations_per_token"] == [LAYERS] * 3
    for depth in (1, 8, LAYERS - 1):  # below its layer count: refused, saying why (test_api_explicit.py has the rest)
        status, refused = complete(client, depth=depth)
        assert status == 400 and "an explicit transformer's depth is its layer count (12)" in str(refused)


def test_its_prompt_is_scored_at_its_one_depth(client, served):
    from eqlm.decoder import OnnxEqLM
    from eqlm.scoring import score_prompt

    status, answer = complete(client, echo=True, logprobs=0, max_tokens=0)
    assert status == 200, answer
    scored = answer["choices"][0]["logprobs"]["token_logprobs"]
    expected = score_prompt(OnnxEqLM(served["models"] / "explicit-demo" / "onnx"), list(PROMPT.encode()), LAYERS)
    assert scored[1:] == pytest.approx(expected.token_logprobs(), abs=1e-5)


def test_the_dial_fixes_its_depth_and_disables_what_it_does_not_take(client, served):
    html = client.get("/demo/?model=explicit-demo").content.decode()
    depth = html[html.index('id="depth"') :].split(">", 1)[0]
    assert f'min="{LAYERS}"' in depth and f'max="{LAYERS}"' in depth and "disabled" in depth
    assert 'value="adaptive" disabled' in html
    for start in ("zero", "warm", "noise"):
        assert f'name="start" value="{start}" checked disabled' in html or f'value="{start}" disabled' in html
    assert 'id="controls-note" class="muted">An explicit transformer' in html
    assert 'id="convergence-not-applicable"' in html and 'id="cv-starts"' not in html
    assert 'id="controls-note" class="muted" hidden' in client.get("/demo/").content.decode()


def test_the_models_page_shows_its_card_with_generated_figures_and_the_experiment(client, served):
    html = every_model_page(client)
    card = html[html.index('id="local-explicit-demo"') :]
    card = card[: card.index("</section>")]
    words = re.sub(r"<[^>]+>", "", card)  # the card's text: glossary terms in it are links
    assert "explicit baseline of the head-to-head" in words and "not an equilibrium model" in words
    assert 'href="/benchmarks/experiments/head-to-head-demo/"' in card
    assert 'data-figure="explicit-demo:layers">12<' in card and "not measured" not in card
    assert "do not apply" in card and "one weight-tied" not in card
