"""The experiment pages in a real browser: the plot draws, axe finds nothing serious in light or dark mode or on a
phone, and nothing leaves the machine."""

import pytest

from tests.axe import horizontal_overflow, serious_violations, settle

from .factories import DEPTHS, tiny_experiment, write_rows

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_experiment_pages_are_accessible_and_draw_the_plot(page):
    experiment = tiny_experiment()
    for seed in (1, 2):
        write_rows(experiment, "base", seed, {d: 3.0 - 0.1 * d + 0.01 * seed for d in DEPTHS})
        write_rows(experiment, "base", seed, {d: 3.4 - 0.1 * d for d in DEPTHS}, start="noise")
        write_rows(experiment, "fast", seed, {d: 2.9 - 0.1 * d for d in DEPTHS})
    page.set_default_timeout(45_000)  # plotly is ~4 MB from a single-threaded live server on a busy machine
    problems = []
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        for url in ("/benchmarks/experiments/", "/benchmarks/experiments/tiny/"):
            assert page.goto(url).status == 200
            if url.endswith("tiny/"):
                page.wait_for_selector("#experiment-plot .main-svg")
            settle(page)
            problems += [f"{url} [{scheme}] {v}" for v in serious_violations(page)]
    page.set_viewport_size({"width": 375, "height": 800})
    page.goto("/benchmarks/experiments/tiny/")
    page.wait_for_selector("#experiment-plot .main-svg")
    settle(page, thorough=True)
    assert horizontal_overflow(page) <= 0
    problems += [f"phone {v}" for v in serious_violations(page)]
    assert problems == [], "\n".join(problems)
    assert page.locator("section[aria-labelledby=h-verdict] .badge").first.inner_text() == "validated"
    page.watch.assert_clean()


def test_the_runs_table_follows_a_running_run(page):
    from experiments_app.models import TrainingRun

    experiment = tiny_experiment()
    run = TrainingRun.objects.create(
        experiment=experiment, arm_label="base", seed=1, arm_hash="h", status="running", step=3, planned_steps=12
    )
    page.goto("/benchmarks/experiments/tiny/")
    cell = page.locator('tr[data-run="base:1"] [data-field="step"]')
    assert cell.inner_text() == "3/12"
    TrainingRun.objects.filter(pk=run.pk).update(step=7, loss=2.5, eta_seconds=40, progress_message="step 7/12")
    page.wait_for_selector('tr[data-run="base:1"] [data-field="step"]:text-is("7/12")', timeout=20_000)
    assert page.locator('tr[data-run="base:1"] [data-field="loss"]').inner_text() == "2.5000"
    assert serious_violations(page) == []
    page.watch.assert_clean()
