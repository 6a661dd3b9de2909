"""The dial's convergence panel: the selected model's stored figures as charts with tables, and in the browser the
converged share at the current tolerance and the residual-by-iteration curve of the token under focus."""

from pathlib import Path

import pytest
from django.conf import settings as django_settings

from models_app.tests.test_convergence_evaluation import SMALL, tiny_registered


def evaluate_tiny(folder: Path, slug: str):
    from models_app.convergence import queue_convergence_evaluation, run_convergence_evaluation

    model = tiny_registered(folder, slug=slug)
    return run_convergence_evaluation(queue_convergence_evaluation(model, {**SMALL, "text": "slice"}).pk)


@pytest.mark.django_db
def test_the_panel_shows_the_models_stored_figures_with_a_table_under_every_chart(client, tmp_path):
    evaluate_tiny(tmp_path, "eqlm-demo")
    html = client.get("/demo/").content.decode()
    for table in ("cv-bpb-table", "cv-residual-table", "cv-converged-table", "cv-adaptive-table", "cv-focus-table"):
        assert f'id="{table}"' in html
    for chart in ("cv-bpb-plot", "cv-residual-plot", "cv-converged-plot", "cv-focus-plot"):
        assert f'id="{chart}"' in html
    assert 'id="convergence-data"' in html and "cv-missing" not in html
    body = html[html.index('id="cv-bpb-table"') : html.index("</table>", html.index('id="cv-bpb-table"'))]
    assert body.count("<tr>") == 1 + 6  # header + depths 1..6
    assert "js/demo-convergence.js" in html


@pytest.mark.django_db
def test_a_model_without_figures_says_how_to_get_them(client):
    html = client.get("/demo/").content.decode()
    assert 'id="cv-missing"' in html and "/api/models/eqlm-demo/evaluations/" in html
    assert 'id="cv-starts-table"' in html  # the run just made from three starts needs no stored figures


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_focus_curve_and_converged_share_follow_the_run_and_the_dial(
    page, live_server, settings, tiny_onnx_dir, serve_models
):
    if not (Path(django_settings.MODELS_DIR) / "eqlm-demo" / "onnx" / "manifest.json").exists():
        serve_models(default=tiny_onnx_dir)
    serve_models()
    evaluate_tiny(Path(settings.MEDIA_ROOT) / "demo-convergence", "eqlm-demo")
    page.set_viewport_size({"width": 375, "height": 800})
    page.goto("/demo/")
    page.wait_for_selector("body[data-dial-ready=true]", timeout=60_000)
    set_value = "(el, v) => { el.value = v; el.dispatchEvent(new Event('input', {bubbles: true})); }"
    page.locator("#depth").evaluate(set_value, "4")
    assert page.locator("#cv-depth").inner_text() == "4"
    share_at = page.locator("#cv-share").inner_text()
    page.locator("#tol").evaluate(set_value, "-0.5")
    assert page.locator("#cv-tol").inner_text() == "0.316"
    assert page.locator("#cv-share").inner_text() != "—"
    assert share_at != "—"

    page.locator("#max-tokens").evaluate(set_value, "6")
    assert page.locator("#cv-focus-table-wrap").is_hidden()  # no empty focusable region before a run
    page.fill("#prompt", "And God said")
    page.click("#generate")
    page.wait_for_selector("#output[data-state=done]", timeout=60_000)
    page.wait_for_selector("#convergence[data-focus-iterations]")
    assert page.locator("#convergence").get_attribute("data-focus-iterations") == "4"  # fixed depth 4
    assert page.locator("#cv-focus-table tbody tr").count() == 4
    assert page.locator("#cv-focus-table-wrap").is_visible()
    assert page.locator("#cv-focus-plot .main-svg").count() >= 1

    # keyboard: one tab stop in the output; arrows move the focus and the curve follows
    tokens = page.locator("#output .tok")
    assert tokens.evaluate_all("spans => spans.filter(s => s.tabIndex === 0).length") == 1
    tokens.first.focus()
    page.keyboard.press("End")
    focused = page.evaluate("document.activeElement.classList.contains('tok')")
    assert focused and page.evaluate("document.activeElement === [...document.querySelectorAll('#output .tok')].pop()")
    page.keyboard.press("ArrowLeft")
    assert page.locator(".tok.tok-focus").count() == 1
    panel = page.locator("#convergence")
    box = panel.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 375  # fits a phone's width
    assert panel.evaluate("el => el.scrollWidth <= el.clientWidth + 1")  # wide tables scroll inside their wrap
