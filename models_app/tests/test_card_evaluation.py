"""Every bundled card's evaluation figures are held to what was measured: the committed facts hold the export's
metrics file and the stored convergence rows of the served checkpoint, the pages print those figures, and no card
states an evaluation figure by hand. (That the committed facts are what regeneration writes now is
test_card_facts.py's first test.)"""

import json
import re
from html import unescape
from pathlib import Path

import pytest
from django.conf import settings

from eqlm.card_evaluation import CARD_TOL, split_prose
from models_app.bundled import PROSE_KEYS, bundled_model
from models_app.tests.model_pages import every_model_page

pytestmark = pytest.mark.django_db

ROOT = Path(settings.BASE_DIR)


def facts(model_id: str) -> dict:
    return json.loads(bundled_model(model_id).facts_path.read_text())


def evaluation(model_id: str) -> dict:
    return facts(model_id)["evaluation"]


def figure(model_id: str, name: str) -> float:
    return evaluation(model_id)["figures"][name]["value"]


def explicit(model_id: str) -> bool:
    """An explicit transformer: one depth, no convergence rows (the evaluation refuses it), nothing that converges."""
    return json.loads(bundled_model(model_id).metrics_path.read_text())["model_class"] == "ExplicitLM"


def sources(model_id: str) -> tuple[dict, dict]:
    """The model's metrics file and its stored convergence rows, read here without the module under test:
    ({series: {depth: bits/byte}}, {"converged": {solver: {depth: share}}, "halting": {solver: {metric: value}}})."""
    metrics = json.loads(bundled_model(model_id).metrics_path.read_text())
    stored = json.loads((ROOT / "fixtures" / "local_results.json").read_text())["models"]
    entry = {"rows": []} if explicit(model_id) else stored[model_id]
    series = {"export": {int(d): v for d, v in metrics["held_out_bits_per_byte"].items()}}
    converged: dict[str, dict] = {}
    halting: dict[str, dict] = {}
    rows = list(entry["rows"])  # and the series (one list of values by depth per condition), one row per depth
    for metric, unit, n, condition, depths, values in entry.get("series", []):
        rows += [[metric, v, unit, n, {"depth": d, **condition}] for d, v in zip(depths, values, strict=True)]
    for metric, value, _unit, _n, condition in rows:
        solver = condition.get("solver")
        if solver is None or condition.get("start", "zero") != "zero":  # the cards show the zero start
            continue
        if "depth" in condition and metric == "heldout_bits_per_byte":
            series.setdefault(solver, {})[condition["depth"]] = value
        elif "depth" in condition and metric == "converged_fraction" and condition["tol"] == CARD_TOL:
            converged.setdefault(solver, {})[condition["depth"]] = value
        elif "cap" in condition and condition["tol"] == CARD_TOL:
            halting.setdefault(solver, {})[metric] = value
            halting[solver]["cap"] = condition["cap"]
    return series, {"converged": converged, "halting": halting, "metrics": metrics}


def test_each_served_checkpoint_is_the_one_its_sources_measured(bundled_model_ids):
    for model_id in bundled_model_ids:
        served = facts(model_id)["served"]["sha256"]
        measured = evaluation(model_id)["sources"]
        assert measured["export"]["checkpoint_sha256"] == served and "left_out" not in measured["export"]
        if explicit(model_id):  # nothing to converge: no stored convergence rows, and the facts say why
            assert measured["local"] is None and "do not apply" in evaluation(model_id)["not_applicable"]
            continue
        assert f":{served[:12]}:" in measured["local"]["run"] and "left_out" not in measured["local"]


def test_each_cards_figures_by_depth_are_its_metrics_file_and_stored_rows(bundled_model_ids):
    for model_id in bundled_model_ids:
        series, other = sources(model_id)
        table = evaluation(model_id)["by_depth"]
        expected = {"export.bits_per_byte": series["export"]}
        for solver in () if explicit(model_id) else ("picard", "anderson"):
            expected[f"{solver}.bits_per_byte"] = series[solver]
            expected[f"{solver}.converged"] = other["converged"][solver]
        assert [row["key"] for row in table["rows"]] == list(expected)
        for row in table["rows"]:
            want = [expected[row["key"]].get(d) for d in table["depths"]]
            assert row["values"] == [None if v is None else round(v, 4) for v in want], (model_id, row["key"])


def test_each_named_figure_is_its_sources_value(bundled_model_ids):
    for model_id in bundled_model_ids:
        series, other = sources(model_id)
        warm = other["metrics"].get("warm_start_decoding") or {}
        cap = other["halting"].get("picard", {}).get("cap")  # the halting rule's cap (the fixed depths go deeper)
        for name, generated in evaluation(model_id)["figures"].items():
            kind, _, at = name.partition("@")
            head, _, tail = kind.partition(".")
            if head == "bpb":
                want = series[tail][int(at)]
            elif head == "converged":
                want = other["converged"][tail][int(at)]
            elif head in ("best", "best_depth", "deepest", "drift"):
                curve = series[tail]
                best = min(curve, key=lambda d: (curve[d], d))
                want = {"best": curve[best], "best_depth": best, "deepest": max(curve)}.get(head)
                want = curve[max(curve)] - curve[best] if head == "drift" else want
            elif head == "halting" and tail == "cap":
                want = cap
            elif head == "halting":
                solver, field = tail.split(".")
                point = other["halting"][solver]
                want = {
                    "iterations": point["mean_iterations"],
                    "bpb": point["heldout_bits_per_byte"],
                    "converged": point["converged_fraction"],
                    "gain": series[solver][cap] - point["heldout_bits_per_byte"],
                }[field]
            elif name == "tol":
                want = CARD_TOL
            elif name == "layers":  # an explicit transformer's one depth
                want = other["metrics"]["config"]["n_layers"]
            else:
                want = {
                    "warm.iterations_saved": -warm.get("iteration_change", 0),
                    "warm.agreement": warm.get("greedy_token_agreement"),
                    "warm.cap": warm.get("cap"),
                }[name]
            assert generated["value"] == pytest.approx(want, abs=1e-4), (model_id, name)
            text = generated["text"]
            scale = 100 if text.endswith("%") else 1
            digits = len(text.rstrip("%").partition(".")[2])
            half_unit = 0.5 * 10**-digits / scale + 1e-9  # the text is the value to its last printed digit
            assert float(text.rstrip("%")) / scale == pytest.approx(want, abs=half_unit), (model_id, name, text)


def test_every_figure_a_card_names_is_generated(bundled_model_ids):
    for model_id in bundled_model_ids:
        card = json.loads(bundled_model(model_id).card_path.read_text())
        for key in PROSE_KEYS:
            for part in split_prose(card.get(key, "")):
                if isinstance(part, tuple):
                    owner = part[0] or model_id
                    assert part[1] in evaluation(owner)["figures"], f"{model_id}.card.json {key}: {part}"


# What an evaluation figure looks like in prose: a share, a decimal (bits/byte, a mean, a tolerance), a signed
# difference, a speed-up, or a count of bits, iterations or nats. Depths and counts of prompts are not figures.
EVALUATION_FIGURE = re.compile(
    r"\d[\d,]*(\.\d+)?\s*%"
    r"|\d*\.\d+"
    r"|(?<![\w-])[+±−]\d"
    r"|\d+(\.\d+)?\s*[x×]\s+(the\s+)?(tokens|speed)"
    r"|\d[\d,]*\s*(bits?/byte|bits? per byte|iterations|nats)\b"
)


def test_no_card_states_an_evaluation_figure_by_hand(bundled_model_ids):
    for model_id in bundled_model_ids:
        card = json.loads(bundled_model(model_id).card_path.read_text())
        assert "measured" not in card, f"{model_id}.card.json: the table of figures is generated into the facts"
        for key, value in card.items():
            assert isinstance(value, str), f"{model_id}.card.json {key}: a card holds words, not numbers"
            words = "".join(p for p in split_prose(value) if isinstance(p, str))
            match = EVALUATION_FIGURE.search(words)
            assert match is None, f"{model_id}.card.json {key}: {match.group(0)!r} (name a generated figure)"


def test_the_figure_pattern_catches_what_cards_used_to_type():
    for typed in ("96.5% of", "+0.205 bits/byte", "15.4 iterations", "3.6x the tokens/s", "tol 0.01", "(2%)"):
        assert EVALUATION_FIGURE.search(typed), typed
    for words in ("at depth 64", "depths 4-16", "bench/decode.py --cap", "eqlm-demo-unrolled", "an 8-layer net"):
        assert EVALUATION_FIGURE.search(words) is None, words


def test_what_the_prose_says_in_words_holds_on_the_figures():
    """The cards' qualitative claims, checked on the generated figures, so that new measurements that turn one of
    them false fail here instead of leaving the prose wrong."""
    demo, unrolled, code = "eqlm-demo-anytime", "eqlm-demo-unrolled", "eqlm-code"
    # eqlm-demo-anytime: almost every position reaches the fixed point; halting pays; goals missed; Anderson's basin
    assert figure(demo, "converged.picard@64") > 0.95 > figure(unrolled, "converged.picard@64")
    assert figure(demo, "drift.picard") < figure(unrolled, "drift.picard")
    assert figure(demo, "halting.picard.gain") > 0
    assert figure(demo, "drift.export") > 0.02 and figure(demo, "best.export") > figure(unrolled, "best.export")
    assert figure(demo, "halting.anderson.bpb") > figure(demo, "halting.picard.bpb") + 1
    # eqlm-demo-unrolled: peaks shallow, collapses past 12, halting spends most of its budget, warm start saves little
    assert figure(unrolled, "best_depth.export") <= 12
    assert figure(unrolled, "bpb.picard@64") > figure(unrolled, "bpb.picard@16") > figure(unrolled, "bpb.picard@12")
    assert figure(unrolled, "halting.picard.iterations") > figure(unrolled, "halting.cap") / 2
    assert figure(unrolled, "warm.iterations_saved") < 0.1
    # eqlm-demo: saturates with depth and stays there; beats eqlm-demo-anytime, whose id it took, at its best and at
    # depth 4; Picard settles (every position by depth 64), so residual halting stops well before the cap
    served = "eqlm-demo"
    assert figure(served, "drift.export") <= 0.01
    assert figure(served, "bpb.export@12") - figure(served, "best.export") <= 0.03
    assert figure(served, "best.export") < figure(demo, "best.export")
    assert figure(served, "bpb.export@4") < figure(demo, "bpb.export@4")
    assert figure(served, "converged.picard@64") >= 0.99
    assert figure(served, "halting.picard.iterations") < figure(served, "halting.cap") / 2
    # eqlm-code: most positions settle past depth 24; Picard is sooner than Anderson; little drift
    assert figure(code, "converged.picard@24") > 0.5
    assert figure(code, "converged.picard@32") > figure(code, "converged.anderson@32")
    assert figure(code, "halting.picard.iterations") < figure(code, "halting.anderson.iterations")
    assert figure(code, "drift.picard") < figure(unrolled, "drift.picard")


def shown_figures(html: str) -> dict[str, str]:
    return {ref: unescape(text) for ref, text in re.findall(r'data-figure="([^"]+:[^"]+)">([^<]*)<', html)}


def table_rows(html: str, table_id: str) -> dict[str, list[str]]:
    table = html[html.index(f'id="{table_id}"') :]
    table = table[: table.index("</table>")]
    return {
        key: re.findall(r'<td class="num">([^<]*)</td>', row)
        for key, row in re.findall(r'<tr data-row="([^"]+)">(.*?)</tr>', table, re.S)
    }


def cells(row: dict) -> list[str]:
    return ["—" if v is None else f"{v:.2%}" if row["unit"] == "fraction" else f"{v:g}" for v in row["values"]]


def test_the_models_page_prints_the_generated_figures_in_prose_and_table(client, bundled_model_ids):
    html = every_model_page(client)
    shown = shown_figures(html)
    named = 0
    for model_id in bundled_model_ids:
        prefix = "demo" if model_id == "eqlm-demo" else model_id
        generated = evaluation(model_id)
        assert table_rows(html, f"{prefix}-card-table") == {r["key"]: cells(r) for r in generated["by_depth"]["rows"]}
        for ref, text in shown.items():
            owner, name = ref.split(":", 1)
            if owner == model_id:
                assert text == generated["figures"][name]["text"], ref
                named += 1
    assert named > 20 and "not measured" not in html


def test_the_dial_prints_the_selected_models_generated_figures(client, bundled_model_ids):
    for model_id in bundled_model_ids:
        html = client.get(f"/demo/?model={model_id}").content.decode()
        card = html[html.index('id="model-card"') :]
        table = evaluation(model_id)["by_depth"]["rows"]
        assert table_rows(card, "card-table") == {r["key"]: cells(r) for r in table}
        for ref, text in shown_figures(card).items():
            owner, name = ref.split(":", 1)
            assert text == evaluation(owner)["figures"][name]["text"], ref


def test_the_generated_tables_download(client):
    rows = client.get("/models/eqlm-code/measured.json").json()["rows"]
    table = evaluation("eqlm-code")["by_depth"]
    assert [r["depth"] for r in rows] == table["depths"]
    assert rows[-1]["picard.converged"] == table["rows"][2]["values"][-1]
    halting = client.get("/models/eqlm-demo/halting.csv").content.decode().splitlines()
    assert halting[0].startswith("solver,tol,cap,mean_iterations") and len(halting) == 1 + len(
        evaluation("eqlm-demo")["halting"]
    )
