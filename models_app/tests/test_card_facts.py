"""Every bundled card is held to its checkpoint: the committed facts are what the checkpoints record, and /models/
and /demo/ show those facts, with no hand-written training figure beside them."""

import io
import json
import re
import shutil
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError

from eqlm.checkpoint import load_checkpoint
from eqlm.recipe import load_recipe
from models_app.bundled import bundled_model
from models_app.card_facts import facts_for, render
from models_app.tests.model_pages import every_model_page

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def regenerated(bundled_model_ids) -> dict[str, dict]:
    """Each bundled model's facts, regenerated now from its checkpoints."""
    return {model_id: facts_for(bundled_model(model_id)) for model_id in bundled_model_ids}


def figures(html: str) -> dict[str, str]:
    return {name: value.replace(",", "") for name, value in re.findall(r'data-figure="([^"]+)">([^<]*)<', html)}


def section(html: str, model_id: str) -> str:
    start = html.index('id="local-demo"' if model_id == "eqlm-demo" else f'id="local-{model_id}"')
    return html[start : html.index("</section>", start)]


def test_the_committed_facts_are_what_the_checkpoints_record_now(bundled_model_ids, regenerated):
    for model_id in bundled_model_ids:
        committed = bundled_model(model_id).facts_path.read_text()
        assert committed == render(regenerated[model_id]), f"run: manage.py write_card_facts {model_id}"


def test_each_served_checkpoint_is_its_recipes_last_stage_with_the_figures_it_records(bundled_model_ids, regenerated):
    """The figures come from torch.load of each checkpoint, not from the facts module's own reading."""
    for model_id in bundled_model_ids:
        facts = regenerated[model_id]
        assert [s["name"] for s in facts["stages"]] == load_recipe(model_id).chain()
        assert facts["served"]["stage"] == facts["stages"][-1]["name"]
        for stage in facts["stages"]:
            if stage["recorded"] is None:
                continue
            _, data = load_checkpoint(Path(stage["recorded"]["checkpoint"]).resolve())
            p = data["provenance"]
            recorded = stage["recorded"]
            assert (recorded["steps"], recorded["bytes_seen"], recorded["seconds"]) == (
                p["steps"],
                p["tokens"],
                p["train_seconds"],
            )
            assert (recorded["git_commit"], recorded["corpus_sha256"]) == (p["git_commit"], p["corpus_sha256"])
        served = facts["stages"][-1]["recorded"]
        root = Path(settings.BASE_DIR).resolve()
        assert served["checkpoint"] == str(bundled_model(model_id).checkpoint.resolve().relative_to(root))


def test_the_six_stage_models_earlier_stages_are_found_among_the_kept_candidates(regenerated):
    stages = {s["name"]: s["recorded"] for s in regenerated["eqlm-demo-anytime"]["stages"]}
    assert stages["phantom"]["checkpoint"].endswith("candidates/eqlm-demo-anytime-deep.pt")
    assert stages["early-gain"]["continues"] == "residual"
    assert stages["deep"] is None and stages["teach"] is None  # their checkpoints are not bundled
    totals = regenerated["eqlm-demo-anytime"]["totals"]
    assert totals["bytes_seen"] == sum(r["bytes_seen"] for r in stages.values() if r)


def test_the_models_page_shows_the_generated_facts_for_every_stage(client, bundled_model_ids, regenerated):
    html = every_model_page(client)
    assert "anytime-unrolled cross-entropy" not in html
    for model_id in bundled_model_ids:
        facts, card = regenerated[model_id], section(html, model_id)
        prefix = "demo" if model_id == "eqlm-demo" else model_id
        shown = figures(card)
        totals = facts["totals"]
        assert shown[f"{prefix}-steps"] == str(totals["recorded_steps"])
        assert shown[f"{prefix}-bytes"] == str(totals["bytes_seen"])
        assert float(shown[f"{prefix}-seconds"]) == totals["seconds"]
        assert shown[f"{prefix}-planned-bytes"] == str(totals["planned_bytes"])
        assert re.findall(r'<tr data-stage="([^"]+)"', card) == [s["name"] for s in facts["stages"]]
        for stage in facts["stages"]:
            recorded, name = stage["recorded"], f"{prefix}-{stage['name']}"
            if recorded is None:
                assert f"{name}-steps" not in shown
                continue
            assert shown[f"{name}-steps"] == str(recorded["steps"])
            assert shown[f"{name}-bytes"] == str(recorded["bytes_seen"])
            assert float(shown[f"{name}-seconds"]) == recorded["seconds"]


def test_the_stage_table_downloads_have_one_row_per_stage(client, regenerated):
    rows = client.get("/models/eqlm-demo-anytime/stages.json").json()["rows"]
    assert [r["stage"] for r in rows] == [s["name"] for s in regenerated["eqlm-demo-anytime"]["stages"]]
    assert rows[-1]["bytes_seen"] == regenerated["eqlm-demo-anytime"]["stages"][-1]["recorded"]["bytes_seen"]
    csv = client.get("/models/eqlm-code/stages.csv").content.decode().splitlines()
    assert len(csv) == 1 + len(regenerated["eqlm-code"]["stages"])


def test_the_demo_banner_shows_the_generated_facts(client, bundled_model_ids, regenerated):
    for model_id in bundled_model_ids:
        html = client.get(f"/demo/?model={model_id}").content.decode()
        banner = html[html.index('id="demo-limitation"') : html.index("</p>", html.index('id="demo-limitation"'))]
        totals = regenerated[model_id]["totals"]
        shown = figures(banner)
        assert shown["demo-bytes"] == str(totals["bytes_seen"])
        assert shown["demo-minutes"] == str(round(totals["seconds"] / 60))
        assert regenerated[model_id]["served"]["corpus"].split(" (")[0] in banner
    demo = client.get("/demo/?model=eqlm-demo-anytime").content.decode()
    assert "4,096,000 bytes seen" not in demo and "of its 6 training stages" in demo


# A number followed by one of these is a training figure: it belongs in the generated facts, not in prose.
TRAINING_FIGURE = re.compile(r"\d[\d,.]*\s*(M |k )?(steps|minutes|hours|bytes seen|bytes of training|stages)\b")


def test_no_card_prose_states_a_training_figure(bundled_model_ids):
    for model_id in bundled_model_ids:
        card = json.loads(bundled_model(model_id).card_path.read_text())
        for key in ("summary", "shows", "halting_and_warm_start"):
            match = TRAINING_FIGURE.search(card.get(key, ""))
            assert match is None, f"{model_id}.card.json {key}: {match.group(0)!r}"


def test_a_cards_recipe_file_is_served_as_text(client):
    response = client.get("/models/recipes/eqlm-demo-anytime.toml")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")
    assert "[stages.flat]" in response.content.decode()
    assert client.get("/models/recipes/nope.toml").status_code == 404


def test_write_card_facts_writes_a_models_facts_beside_its_checkpoint(tmp_path, settings, regenerated):
    settings.MODELS_DIR = tmp_path  # every bundled file is looked for in tmp_path
    (tmp_path / "eqlm-code").mkdir()
    shutil.copy(Path(settings.BASE_DIR) / "models" / "eqlm-code" / "checkpoint.pt", tmp_path / "eqlm-code")
    call_command("write_card_facts", "eqlm-code", stdout=io.StringIO())
    written = json.loads((tmp_path / "eqlm-code" / "facts.json").read_text())
    assert written["totals"] == regenerated["eqlm-code"]["totals"]
    with pytest.raises(CommandError, match="not a bundled model: nope"):
        call_command("write_card_facts", "nope")


def test_a_model_without_a_facts_file_says_how_to_write_it(client, settings, tmp_path):
    demo = Path(settings.BASE_DIR) / "models" / "eqlm-code"
    (tmp_path / "eqlm-code").mkdir()
    for name in ("checkpoint.pt", "metrics.json", "card.json"):
        shutil.copy(demo / name, tmp_path / "eqlm-code")
    settings.MODELS_DIR = tmp_path  # every bundled file is looked for in tmp_path
    card = section(every_model_page(client), "eqlm-code")
    assert "no training facts: <code>manage.py write_card_facts</code> writes them" in card
    assert 'data-figure="eqlm-code-steps"' not in card and "<dt>Corpus</dt>" not in card
    banner = client.get("/demo/?model=eqlm-code").content.decode()
    assert 'data-figure="demo-bytes"' not in banner


def test_the_apis_label_the_exports_training_figures_as_the_last_stages(client, regenerated):
    """The export's metrics and manifest record only the served checkpoint's stage; the served manifest and
    /api/models/ say so and give the generated totals beside them."""
    from models_app.bundled import register_bundled_models

    facts = regenerated["eqlm-demo-anytime"]  # six stages: the totals are more than the last stage's
    last = facts["stages"][-1]["recorded"]
    manifest = client.get("/demo/models/eqlm-demo-anytime/manifest.json").json()
    assert "tokens_seen" not in manifest["metrics"] and "tokens" not in manifest["provenance"]
    assert manifest["metrics"]["last_stage"] == {
        "stage": facts["served"]["stage"],
        "tokens_seen": last["bytes_seen"],
        "train_seconds": last["seconds"],
    }
    assert manifest["metrics"]["training"]["bytes_seen"] == facts["totals"]["bytes_seen"] > last["bytes_seen"]
    assert manifest["provenance"]["last_stage"]["steps"] == last["steps"]
    register_bundled_models()
    listed = {m["slug"]: m for m in client.get("/api/models/").json()}["eqlm-demo-anytime"]
    assert listed["metrics"]["training"]["bytes_seen"] == facts["totals"]["bytes_seen"]
    assert "tokens" not in listed["provenance"] and listed["provenance"]["last_stage"]["tokens"] == last["bytes_seen"]
    assert listed["provenance"]["last_stage"]["stage"] == facts["served"]["stage"]
