"""How long /benchmarks/ and each table page take to render in Chromium, plots drawn (target: under 1 s each).

Usage: .venv/bin/python bench/benchmarks_render.py [--base http://127.0.0.1:8000] [--runs 5] [--json]

Serve the portal first (`make run`, or `manage.py runserver` on a seeded database). For each page the time is
from navigation start until the load event has fired and every plot on the page has drawn its SVG (plotly's
`.main-svg`), measured in a fresh browser context per run (a cold cache: plotly and the page itself are fetched
each time), then again warm in the same context (plotly cached, as on a reader's second page). It prints the
medians, the page's height in pixels and its plot count, and exits 1 when the overview (cold) or a table page
(warm) is over the target. Not a timed test: the number depends on the machine.
"""

import argparse
import json
import statistics
import sys
import time
import urllib.request

CHROMIUM = "/usr/bin/chromium"
TARGET_S = 1.0


def table_pages(base: str) -> list[str]:
    """/benchmarks/ and every table page it links, from the tables API."""
    with urllib.request.urlopen(f"{base}/api/benchmarks/tables/") as response:
        body = json.load(response)
    return ["/benchmarks/"] + [item["page"] for item in body["tables"]]


def _render(page, url: str) -> float:
    started = time.perf_counter()
    page.goto(url, wait_until="load")
    plots = page.locator(".bench-plot[data-plot]").count()
    if plots:
        page.wait_for_function(
            "n => document.querySelectorAll('.bench-plot .main-svg').length >= n", arg=plots, timeout=30_000
        )
    return time.perf_counter() - started


def measure(browser, url: str) -> dict:
    """One cold visit (a fresh context: nothing cached) and one warm visit right after it (plotly cached)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    cold = _render(page, url)
    warm = _render(page, url)
    out = {
        "cold": cold,
        "warm": warm,
        "height_px": page.evaluate("document.documentElement.scrollHeight"),
        "plots": page.locator(".bench-plot[data-plot]").count(),
    }
    context.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="http://127.0.0.1:8000", help="where the portal is served")
    parser.add_argument("--runs", type=int, default=5, help="runs per page (the median is reported)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = parser.parse_args()

    from playwright.sync_api import sync_playwright

    base = args.base.rstrip("/")
    results = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"], headless=True
        )
        for path in table_pages(base):
            runs = [measure(browser, base + path) for _ in range(args.runs)]
            results.append(
                {
                    "page": path,
                    "cold_median_s": statistics.median(run["cold"] for run in runs),
                    "warm_median_s": statistics.median(run["warm"] for run in runs),
                    "height_px": runs[-1]["height_px"],
                    "plots": runs[-1]["plots"],
                }
            )
        browser.close()
    # The target is the overview's, cold; a table page is judged warm (plotly, 4 MB, is fetched once per visit).
    over = [
        r["page"]
        for r in results
        if (r["cold_median_s"] if r["page"] == "/benchmarks/" else r["warm_median_s"]) > TARGET_S
    ]
    if args.json:
        print(json.dumps({"target_s": TARGET_S, "pages": results, "over_target": over}, indent=1))
    else:
        print(f"{'page':<44} {'cold s':>7} {'warm s':>7} {'height px':>10} {'plots':>6}")
        for r in results:
            cold, warm = r["cold_median_s"], r["warm_median_s"]
            print(f"{r['page']:<44} {cold:>7.3f} {warm:>7.3f} {r['height_px']:>10} {r['plots']:>6}")
        judged = "the overview cold, a table page warm"
        print(f"target: under {TARGET_S:.1f} s ({judged}); over it: {', '.join(over) or 'none'}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
