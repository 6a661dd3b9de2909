"""/benchmarks/ shows the portal's own models' quality and convergence, computed from the evaluation's rows."""

import pytest

from benchmarks_app.declared import COMPARISONS
from benchmarks_app.models import Comparison
from benchmarks_app.tables import build_table
from inference.tests.test_demo_convergence import evaluate_tiny


@pytest.mark.django_db
def test_the_convergence_rows_are_a_table_and_plot_on_the_benchmarks_page(client, tmp_path):
    from inference.convergence import stored_figures

    evaluate_tiny(tmp_path, "tiny-bench")
    Comparison.objects.create(**next(c for c in COMPARISONS if c["slug"] == "local-convergence"))
    table = build_table(Comparison.objects.get(slug="local-convergence"), use_cache=False)
    rows = {row["id"]: [cell["text"] for cell in row["cells"]] for row in table["rows"]}
    figures = stored_figures("tiny-bench")
    picard = figures["solvers"]["picard"]
    assert rows["tiny-bench:picard:d4"][:5] == [
        "tiny-bench",
        "picard",
        "fixed 4",
        "4",
        f"{picard['heldout_bits_per_byte'][3]:.4f}",
    ]
    assert "tiny-bench:anderson:d1" in rows and "tiny-bench:picard:d5" not in rows  # the ladder 1, 2, 4, ... only
    adaptive = rows["tiny-bench:picard:tol0.02"]
    point = next(p for p in figures["adaptive"] if p["solver"] == "picard" and p["tol"] == 0.02)
    assert (
        adaptive[3] == f"{point['mean_iterations']:.2f}"
        and adaptive[5] == f"{point['fixed_bits_per_byte_at_mean_depth']:.4f}"
    )
    assert table["plot"]["series"]["tiny-bench · picard"]["x"] == [1, 2, 3, 4, 5, 6]
    page = client.get("/benchmarks/local-convergence/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "tiny-bench" in html and "adaptive tol 0.02" in html and "bench-plot-data" in html
    assert "This portal&#x27;s own models" in client.get("/benchmarks/").content.decode()


@pytest.mark.django_db
def test_the_stable_and_converged_targets_are_checked_from_the_rows(tmp_path):
    from benchmarks_app.tables.convergence import targets

    series = {
        "depth": [1, 12, 32, 64],
        "heldout_bits_per_byte": [5.0, 2.20, 2.21, 2.25],
        "converged": {"0.01": [0.0, 0.5, 0.96, 0.99]},
    }
    notes = targets("m", series)
    assert "stable" in notes[0] and "is missed" in notes[0] and "+0.050" in notes[0]
    assert "converged" in notes[1] and "holds" in notes[1] and "96.0%" in notes[1]
