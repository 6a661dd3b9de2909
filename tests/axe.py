"""The one axe helper: axe-core in a Playwright page, served from static/vendor/ (the CSP allows same-origin JS)."""

AXE_URL = "/static/vendor/axe.min.js"
AXE_OPTIONS = "{resultTypes: ['violations']}"  # axe's full default rule set (every WCAG level and best practice)


def serious_violations(page) -> list[str]:
    """Serious and critical axe violations on the page as it is now (one line each)."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(url=AXE_URL)
    result = page.evaluate(f"axe.run(document, {AXE_OPTIONS})")
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}"
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def horizontal_overflow(page) -> int:
    """How many CSS pixels the page is wider than the viewport (0 = no sideways scrolling)."""
    widest = "Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"
    return page.evaluate(f"{widest} - window.innerWidth")


def settle(page, thorough: bool = False) -> None:
    """Wait for the page's scripts to draw (plots, fetched tables) before checking it."""
    page.wait_for_load_state("networkidle" if thorough else "load")
    page.wait_for_timeout(150 if thorough else 100)
