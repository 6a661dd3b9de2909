"""Every table page reads at 1280 px: no cell's content runs past its cell or its table, a table wider than its frame
scrolls inside it with its first column held, the page never scrolls sideways, and no two series in a plot share
a colour (and a dash)."""

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Per table: cells whose content overflows the cell, cells reaching past the table's right edge, and whether a
# table wider than its frame sits in a frame that scrolls.
TABLE_FIT = """() => [...document.querySelectorAll("main table")].map((table) => {
  const box = table.getBoundingClientRect();
  const cells = [...table.querySelectorAll("th, td")].filter((c) => c.getClientRects().length);
  const frame = table.closest(".table-wrap");
  const wide = frame && table.scrollWidth > frame.clientWidth + 1;
  const first = table.querySelector("tbody tr > :first-child");
  return {
    caption: (table.caption && table.caption.textContent.trim()) || table.id || "(no caption)",
    overflowing: cells.filter((c) => c.scrollWidth > c.clientWidth + 1).map((c) => c.textContent.trim().slice(0, 60)),
    past_edge: cells.filter((c) => c.getBoundingClientRect().right > box.right + 1).length,
    unframed_wide: !frame && table.scrollWidth > document.querySelector("main").clientWidth + 1,
    frame_scrolls: !wide || ["auto", "scroll"].includes(getComputedStyle(frame).overflowX),
    first_sticky: !wide || !first || getComputedStyle(first).position === "sticky",
  };
})"""
# Per plot: one (colour, dash or pattern) per series, a series being the traces that share a legend group.
PLOT_SERIES = """() => [...document.querySelectorAll(".js-plotly-plot")].map((plot) => {
  const series = {};
  for (const t of plot.data || []) {
    if (t.meta === "keep-style" || t.hoverinfo === "skip") continue;
    const key = t.legendgroup || t.name;
    const marker = t.marker || {};
    const colour = t.type === "bar" ? marker.color : (t.line && t.line.color) || marker.color;
    const dash = t.type === "bar" ? (marker.pattern && marker.pattern.shape) || "" : (t.line && t.line.dash) || "solid";
    series[key] = series[key] || { colour: String(colour), dash: String(dash) };
  }
  return { id: plot.id, series: Object.entries(series) };
})"""


def table_page_urls() -> list[str]:
    from benchmarks_app.models import Comparison
    from benchmarks_app.tables import build_table

    return [f"/benchmarks/{c.slug}/" for c in Comparison.objects.all() if not build_table(c)["empty"]]


def test_every_table_page_fits_its_tables_and_gives_each_plot_series_its_own_colour(page):
    from tests.portal_pages import seed_portal

    seed_portal()
    page.set_default_timeout(45_000)  # plotly is ~4 MB from a single-threaded live server on a busy machine
    page.set_viewport_size({"width": 1280, "height": 900})
    problems = []
    for url in table_page_urls():
        page.goto(url)
        plots = page.locator(".bench-plot[data-plot]").count()
        if plots:
            page.wait_for_function("n => document.querySelectorAll('.bench-plot .main-svg').length >= n", arg=plots)
        if page.evaluate("document.documentElement.scrollWidth") > 1280:
            problems.append(f"{url}: the page scrolls sideways")
        for table in page.evaluate(TABLE_FIT):
            where = f"{url} table {table['caption']!r}"
            if table["overflowing"]:
                problems.append(f"{where}: content runs past its cell: {table['overflowing'][:3]}")
            if table["past_edge"] or table["unframed_wide"]:
                problems.append(f"{where}: cells reach past the table or the page")
            if not (table["frame_scrolls"] and table["first_sticky"]):
                problems.append(f"{where}: wider than its frame without a scrolling frame and a held first column")
        for plot in page.evaluate(PLOT_SERIES):
            styles = [tuple(style.values()) for _, style in plot["series"]]
            colours = [colour for colour, _ in styles]
            if len(set(styles)) < len(styles) or (len(styles) <= 11 and len(set(colours)) < len(colours)):
                problems.append(f"{url} plot {plot['id']}: series share a colour: {plot['series']}")
    page.watch.assert_clean()
    assert not problems, "\n".join(problems)
