"""The benchmark pages in a real browser: plots draw, no serious accessibility violations, no console errors."""

import pytest

from benchmarks_app.seed import seed
from tests.axe import serious_violations


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_table_pages_draw_their_plots_accessibly_without_console_errors(page):
    seed()
    page.set_default_timeout(45_000)  # plotly is ~4 MB from a single-threaded live server on a busy machine
    page.goto("/benchmarks/f24-budget-sweep/")
    page.wait_for_selector("#bench-plot .main-svg")
    assert page.locator("table.bench-table tbody tr").count() == 3
    assert serious_violations(page) == []
    page.goto("/benchmarks/")
    assert page.locator("table.bench-overview-table tbody tr").count() >= 8
    assert serious_violations(page) == []
    page.goto("/benchmarks/runs/exp13_seed42/")
    page.wait_for_selector("#bench-plot .main-svg")
    before = page.locator("#bench-plot .main-svg").first.evaluate("n => getComputedStyle(n).backgroundColor")
    page.click("#theme-toggle")
    page.wait_for_function(
        "b => getComputedStyle(document.querySelector('#bench-plot .main-svg')).backgroundColor !== b", arg=before
    )
    page.watch.assert_clean()
