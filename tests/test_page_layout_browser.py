"""Every page at 1280 and 375 px in headless Chromium: no plot's axis title overlaps its legend, its title, another
axis title or the other axis's tick labels (checked by bounding boxes), and the console stays clean."""

import pytest

from .axe import settle
from .portal_pages import public_page_urls, seed_portal

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = (1280, 375)

# For every drawn plotly plot: each axis title's box against the legend, the plot title, the other axis titles and
# every tick label. Boxes must intersect by more than a pixel each way to count.
OVERLAPS_JS = """
() => {
  const box = (node) => { const r = node.getBoundingClientRect(); return r.width && r.height ? r : null; };
  const hit = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1
                     && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1;
  const name = (node) => (node.textContent || "").trim().slice(0, 40);
  const out = [];
  document.querySelectorAll(".js-plotly-plot").forEach((plot, index) => {
    if (!plot.offsetParent) return;  // hidden (a closed <details>, an inactive tab)
    const where = plot.id || `plot ${index + 1}`;
    const isAxisTitle = (t) => /^[xy]\\d*title$/.test(t.getAttribute("class")) && name(t);
    const titles = [...plot.querySelectorAll("text[class$='title']")].filter(isAxisTitle);
    const others = [];
    plot.querySelectorAll(".legend .bg").forEach((n) => others.push(["legend", n]));
    plot.querySelectorAll("text.gtitle").forEach((n) => name(n) && others.push(["plot title", n]));
    titles.forEach((t) => others.push([`axis title '${name(t)}'`, t]));
    plot.querySelectorAll(".xtick text, .ytick text").forEach((n) => others.push([`tick '${name(n)}'`, n]));
    titles.forEach((t) => {
      const a = box(t);
      if (!a) return;
      others.forEach(([label, n]) => {
        if (n === t) return;
        const b = box(n);
        if (b && hit(a, b)) out.push(`${where}: axis title '${name(t)}' overlaps ${label}`);
      });
    });
  });
  return [...new Set(out)];
}
"""


def wait_for_plots(page, seconds: float = 8) -> None:
    """Wait until the page's plots stop appearing: plotly draws after load, a page of ten plots for a second or two."""
    count = "document.querySelectorAll('.js-plotly-plot .main-svg').length"
    last, steady, waited = -1, 0, 0.0
    while steady < 3 and waited < seconds:
        page.wait_for_timeout(200)
        waited += 0.2
        now = page.evaluate(count)
        steady = steady + 1 if now == last else 0
        last = now


def focused_on_the_range_that_matters(page) -> None:
    """The convergence plot's y-axis covers depth 4 on (about 2.2-5.2 bits/byte), not depth 1's 16.5, which is
    marked at the edge and named in the caption."""
    top = page.evaluate("document.getElementById('bench-plot').layout.yaxis.range[1]")
    depth_one = page.evaluate(
        "Math.max(...document.getElementById('bench-plot').data.filter((t) => t.mode === 'lines+markers')"
        ".map((t) => t.y[t.x.indexOf(1)]))"
    )
    assert top < 8 < depth_one, (top, depth_one)
    assert "Off the scale, marked ▲ at the edge: depth 1" in page.inner_text("figure.bench-figure figcaption")


def lab_path_job_url() -> str:
    """A finished QRE path job, whose page draws the path against λ with a legend of every action."""
    from lab_app import services
    from lab_app.tasks import run_lab_job

    run = services.create_job({"game": "battle_of_the_sexes", "solver": "qre_path", "params": {"lambda_max": 100}})
    run.refresh_from_db()
    if not run.is_finished:
        run_lab_job(run.pk)
    return f"/lab/jobs/{run.pk}/"


def test_every_page_at_desktop_and_phone_width_has_no_overlapping_axis_titles_or_console_errors(page):
    seed_portal()
    page.set_default_timeout(60_000)  # plotly is ~4 MB from a single-threaded live server on a busy machine
    urls = [*public_page_urls(), lab_path_job_url()]
    problems = []
    plots_checked = 0
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        for url in urls:
            response = page.goto(url)
            assert response.status == 200, url
            settle(page, thorough=True)
            wait_for_plots(page)
            plots_checked += page.evaluate("document.querySelectorAll('.js-plotly-plot').length")
            problems += [f"{url} [{width} px] {p}" for p in page.evaluate(OVERLAPS_JS)]
            if url == "/benchmarks/local-convergence/" and width == 1280:
                focused_on_the_range_that_matters(page)
    assert plots_checked > 20
    assert problems == [], "\n".join(problems)
    page.watch.assert_clean()
