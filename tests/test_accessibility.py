"""Every page in headless Chromium: axe finds no serious or critical violation in light or dark mode or on a
375-px-wide phone (where wide tables scroll inside a focusable region), nothing leaves the machine, the console
stays clean, the phone needs no sideways scrolling of the page, and the lab and the depth dial work from the
keyboard alone.

The suite checks every page but only one benchmark table; `RELIABILITY_FULL=1` (make reliability) checks them all.
"""

import os
import time

import pytest

from .axe import horizontal_overflow, serious_violations, settle
from .portal_pages import public_page_urls, seed_portal
from .report import record

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
FULL = os.environ.get("RELIABILITY_FULL") == "1"


def test_every_page_is_accessible_in_light_and_dark_mode_and_fits_a_phone(page):
    seed_portal()
    urls = public_page_urls(tables=None if FULL else 1)  # the table pages share a template: one in the suite
    problems = []
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        for url in urls:
            response = page.goto(url)
            assert response.status == 200, url
            settle(page, thorough=FULL)
            wait_for_dial_legend(page)
            if not url.startswith(("/admin/", "/api/docs/")):  # the admin and Swagger UI have their own themes
                assert page.evaluate("document.documentElement.dataset.theme") == scheme, url
            problems += [f"{url} [{scheme}] {violation}" for violation in serious_violations(page)]
    page.set_viewport_size({"width": 375, "height": 800})
    for url in urls:
        page.goto(url)
        settle(page, thorough=True)
        wait_for_dial_legend(page)
        overflow = horizontal_overflow(page)
        if overflow > 0:
            problems.append(f"{url} [375 px] wider than the screen by {overflow} px")
        problems += [f"{url} [375 px] {violation}" for violation in serious_violations(page)]
    record(
        "accessibility",
        {
            "pages": len(urls),
            "axe_runs": 3 * len(urls),
            "phone_checks": len(urls),
            "problems": problems,
            "console_errors": page.watch.console_errors,
            "external_requests": page.watch.external_requests,
            "requests_seen": len(page.watch.requests),
        },
    )
    assert problems == [], "\n".join(problems)
    page.watch.assert_clean()


def wait_until(page, expression: str, seconds: float = 15) -> None:
    """Poll a condition from outside the page (the CSP forbids the eval that page.wait_for_function uses)."""
    deadline = time.monotonic() + seconds
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {expression}")
        page.wait_for_timeout(100)


def wait_for_dial_legend(page) -> None:
    """On the depth dial, axe must check the iteration shading's legend at the served model's cap, which the script
    draws once the model has loaded: without this wait a slow load left the darkest swatch unchecked. The page marks
    its final start-up state (`data-dial-ready`: true, or false when the model cannot load)."""
    if page.query_selector("#legend-swatches") is not None:
        wait_until(page, "'dialReady' in document.body.dataset", 60)


def tab_to(page, element_id: str, limit: int = 80) -> None:
    """Press Tab until the element has focus, as a keyboard user would."""
    for _ in range(limit):
        if page.evaluate("document.activeElement && document.activeElement.id") == element_id:
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"#{element_id} cannot be reached with Tab")


def test_the_lab_can_be_driven_from_the_keyboard_alone(page):
    page.goto("/lab/")
    settle(page)
    tab_to(page, "solver")
    page.keyboard.press("End")  # the last solver in the list, chosen with the keyboard
    chosen = page.evaluate("document.getElementById('solver').value")
    tab_to(page, "run-button")
    page.keyboard.press("Enter")
    wait_until(page, "document.getElementById('results-body').textContent.trim().length > 0")
    assert chosen in page.url or page.locator("#results-body table").count() > 0
    page.watch.assert_clean()


def test_the_depth_dial_can_be_driven_from_the_keyboard_alone(page):
    page.goto("/demo/")
    wait_until(page, "!document.getElementById('generate').disabled", 60)
    tab_to(page, "depth-slider")  # the logarithmic slider: an arrow key moves the depth by one
    start = int(page.locator("#depth-value").inner_text())  # the served model's default depth
    for _ in range(4):
        page.keyboard.press("ArrowLeft")
    assert page.locator("#depth-value").inner_text() == str(max(start - 4, 1))
    tab_to(page, "max-tokens")
    page.keyboard.press("Control+A")
    page.keyboard.type("6")
    tab_to(page, "generate")
    page.keyboard.press("Enter")
    wait_until(page, "document.getElementById('fig-tps').textContent.trim() !== '—'", 60)
    assert "Generated text appears here" not in page.locator("#output").inner_text()
    page.watch.assert_clean()
