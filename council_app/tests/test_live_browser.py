"""A real browser chats with the live council on /council/: coloured tokens, weights on focus and in a table."""

import pytest
from playwright.sync_api import expect

from tests.axe import horizontal_overflow, serious_violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TOKENS = 12


@pytest.fixture
def served(settings, council_models_served):
    settings.API_REQUIRE_KEY = True  # the page works without a key: it is the page's own endpoint


def chat(page, message: str) -> None:
    page.fill("#live-message", message)
    page.fill("#live-tokens", str(TOKENS))
    page.focus("#live-send")
    page.keyboard.press("Enter")
    expect(page.locator("#live-weights tbody tr")).to_have_count(TOKENS, timeout=60_000)


def test_chat_with_the_council_and_see_each_token_coloured_by_its_leader(page, served, council):
    page.goto("/council/")
    assert page.locator("#record").is_visible()  # the replay of the measured record stays, apart
    assert page.locator('[data-figure="council-accuracy"]').inner_text() == "0.6194"
    page.fill("#live-beta", "8")  # range inputs take fill(); the output follows on input
    page.dispatch_event("#live-beta", "input")
    assert page.locator("#live-beta-value").inner_text() == "8"
    chat(page, "In the beginning")

    tokens = page.locator("#live-chat .live-token")
    assert tokens.count() >= 1
    first = tokens.first
    leader = first.get_attribute("data-leader")
    assert leader in ("eqlm-demo", "eqlm-code")
    index = ["eqlm-demo", "eqlm-code"].index(leader)
    assert f"lead-{index}" in first.get_attribute("class")
    colour = first.evaluate("e => getComputedStyle(e).backgroundColor")
    assert colour == page.locator(f"#live-legend .lead-{index}").evaluate("e => getComputedStyle(e).backgroundColor")

    first.focus()  # weights on focus
    tip = page.locator("#live-tip")
    assert tip.is_visible() and "eqlm-demo" in tip.inner_text() and "eqlm-code" in tip.inner_text()

    header = page.locator("#live-weights thead th").all_inner_texts()
    assert header[:5] == ["#", "Token", "Leader", "w eqlm-demo", "w eqlm-code"]
    row = page.locator("#live-weights tbody tr").first.locator("td").all_inner_texts()
    weights = [float(row[3]), float(row[4])]
    assert sum(weights) == pytest.approx(1, abs=2e-3)
    assert weights[["eqlm-demo", "eqlm-code"].index(row[2])] == max(weights)  # the leader holds the largest weight

    # beside it: each member alone, then beta = 0 averaging, one after another
    expect(page.locator("#live-alone li")).to_have_count(3, timeout=60_000)
    for answer in page.locator("#live-alone .live-alone-text").all():
        expect(answer).not_to_have_text("…", timeout=60_000)
    labels = page.locator("#live-alone h4").all_inner_texts()
    assert labels == ["eqlm-demo alone", "eqlm-code alone", "Averaging (β = 0, τ = 0)"]
    assert serious_violations(page) == []
    page.watch.assert_clean()


def test_the_live_chat_works_in_dark_mode_and_at_375_px(page, served):
    page.set_viewport_size({"width": 375, "height": 800})
    page.emulate_media(color_scheme="dark")
    page.goto("/council/")
    page.locator("#live-compare").uncheck()
    chat(page, "And God said")
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    assert horizontal_overflow(page) == 0
    assert serious_violations(page) == []
    assert page.locator("#live-alone li").count() == 0
    page.watch.assert_clean()
