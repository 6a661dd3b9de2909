"""The benchmark pages in a real browser: plots draw with no console errors and nothing leaves 127.0.0.1."""

import pytest

from benchmarks_app.seed import seed


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_table_page_draws_its_plot_without_console_errors(page):
    seed()
    page.goto("/benchmarks/f24-budget-sweep/")
    page.wait_for_selector("#bench-plot .main-svg")
    assert page.locator("table.bench-table tbody tr").count() == 3
    page.goto("/benchmarks/runs/exp13_seed42/")
    page.wait_for_selector("#bench-plot .main-svg")
    page.watch.assert_clean()
