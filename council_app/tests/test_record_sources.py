"""The committed fixture against its sources: the web-data files and the facts sheet (when ../shared exists)."""

import importlib.util
import json
import re

import pytest
from django.conf import settings

from council_app import services


def load_builder():
    path = settings.BASE_DIR / "scripts" / "build_council_fixture.py"
    spec = importlib.util.spec_from_file_location("build_council_fixture", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def facts(shared_dir) -> dict:
    return {f["id"]: f for f in json.loads((shared_dir / "findings" / "facts.json").read_text())}


def figure(finding: dict, name: str) -> str:
    return next(f for f in finding["figures"] if f["name"] == name)["value"]


def numbers(text: str) -> list[str]:
    return re.findall(r"-?\d+(?:\.\d+)?", text)


def test_committed_fixture_is_what_the_builder_makes_from_the_shared_files(shared_dir, council_data):
    web = shared_dir / "anchor-results" / "web-data"
    builder = load_builder()
    built = builder.build(
        json.loads((web / "council.json").read_text()), json.loads((web / "leaderboard.json").read_text())
    )
    assert built == council_data


def test_builder_refuses_a_leaderboard_row_for_a_stranger(shared_dir):
    web = shared_dir / "anchor-results" / "web-data"
    builder = load_builder()
    leaderboard = json.loads((web / "leaderboard.json").read_text()) + [{"model_name": "Stranger-9B"}]
    with pytest.raises(ValueError, match="Stranger-9B"):
        builder.build(json.loads((web / "council.json").read_text()), leaderboard)


@pytest.mark.django_db
def test_page_figures_equal_the_facts_sheet_for_f41_and_f54(shared_dir, client, council):
    sheet = facts(shared_dir)
    f41, f54 = sheet["F41"], sheet["F54"]
    html = client.get("/council/").content.decode()

    def shown(name):
        return re.search(rf'data-figure="{name}">([^<]+)<', html).group(1)

    assert numbers(figure(f41, "deployed system vs designated single model")) == [
        shown("council-accuracy"),
        shown("baseline-accuracy"),
    ]
    assert "+" + numbers(
        next(f for f in f41["figures"] if f["name"] == "deployed system vs designated single model")["context"]
    )[0] == shown("margin-points")
    assert numbers(figure(f41, "paired record")) == [shown("f41-wins"), shown("f41-losses"), shown("f41-z")]
    assert numbers(figure(f41, "expected generations per request"))[0] == shown("council-generations")
    assert figure(f54, "council accuracy") == shown("council-accuracy")
    assert figure(f54, "self-consistency, 5 samples (4x)") == shown("sc5-accuracy")
    assert figure(f54, "Qwen2.5-7B-Instruct") == shown("big-accuracy")
    big_context = next(f for f in f54["figures"] if f["name"] == "Qwen2.5-7B-Instruct")["context"]
    # F54 words it from the 7B model's side: 84 wins to 14 for the 7B model, i.e. the council's losses first.
    assert numbers(big_context)[:3] == [shown("f54-losses"), shown("f54-wins"), shown("f54-z")]


def test_the_figures_the_page_quotes_match_the_facts_sheet(shared_dir):
    sheet = facts(shared_dir)
    margins = numbers(figure(sheet["F41"], "per-seed system margins"))
    assert [float(m) for m in margins] == list(services.F41_QUOTED_SEED_MARGINS.values())
    mmlu = [float(v) for v in numbers(figure(sheet["F28"], "MMLU (57 subjects, weighted)"))]
    order = ["Qwen2.5-1.5B-Instruct", "Qwen3-1.7B", "Qwen2.5-Coder-1.5B-Instruct", "Qwen2.5-Math-1.5B-Instruct"]
    assert mmlu == [services.F28_QUOTED_MMLU[name] for name in order]
