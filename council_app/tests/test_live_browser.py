"""A real browser chats with the live council on /council/: coloured tokens, weights on focus and in a table."""

import pytest
from playwright.sync_api import expect

from tests.axe import horizontal_overflow, serious_violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TOKENS = 12


@pytest.fixture
def served(settings, council_models_served):
    settings.API_REQUIRE_KEY = True  # the page works without a key: it is the page's own endpoint


def chat(page, message: str, tokens: int = TOKENS) -> None:
    page.fill("#live-message", message)
    page.fill("#live-tokens", str(tokens))
    page.focus("#live-send")
    page.keyboard.press("Enter")
    expect(page.locator("#live-weights tbody tr")).to_have_count(tokens, timeout=60_000)


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
    assert leader in ("eqlm-demo-anytime", "eqlm-code")
    index = ["eqlm-demo-anytime", "eqlm-code"].index(leader)
    assert f"lead-{index}" in first.get_attribute("class")
    colour = first.evaluate("e => getComputedStyle(e).backgroundColor")
    assert colour == page.locator(f"#live-legend .lead-{index}").evaluate("e => getComputedStyle(e).backgroundColor")

    first.focus()  # weights on focus
    tip = page.locator("#live-tip")
    assert tip.is_visible() and "eqlm-demo-anytime" in tip.inner_text() and "eqlm-code" in tip.inner_text()

    header = page.locator("#live-weights thead th").all_inner_texts()
    assert header[:7] == [
        "#",
        "Token",
        "Leader",
        "w eqlm-demo-anytime",
        "w eqlm-code",
        "π eqlm-demo-anytime",
        "π eqlm-code",
    ]
    row = page.locator("#live-weights tbody tr").first.locator("td").all_inner_texts()
    weights = [float(row[3]), float(row[4])]
    assert sum(weights) == pytest.approx(1, abs=2e-3)
    assert weights[["eqlm-demo-anytime", "eqlm-code"].index(row[2])] == max(
        weights
    )  # the leader holds the largest weight

    # beside it: each member alone, then beta = 0 averaging, one after another
    expect(page.locator("#live-alone li")).to_have_count(3, timeout=60_000)
    for answer in page.locator("#live-alone .live-alone-text").all():
        expect(answer).not_to_have_text("…", timeout=60_000)
    labels = page.locator("#live-alone h4").all_inner_texts()
    assert labels == ["eqlm-demo-anytime alone", "eqlm-code alone", "Averaging (β = 0, τ = 0, no memory)"]
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


def leaders_and_text(page) -> tuple[list[str], str]:
    rows = page.locator("#live-weights tbody tr")
    led = [row.locator("td").nth(2).inner_text() for row in rows.all()]
    return led, page.locator("#live-chat .chat-council").last.locator("p").inner_text()


@pytest.mark.parametrize(
    ("prompt", "member"),
    [("And God said", "eqlm-demo-anytime"), ("def get_queryset(self):\n        return", "eqlm-code")],
)
def test_at_the_default_controls_the_prompts_own_member_leads_and_the_answer_is_text(page, prompt, member):
    """With the bundled members (the tiny test members have no domain to lead)."""
    page.goto("/council/")
    assert page.locator("#live-memory").input_value() == "fixed_share"
    assert page.locator("#live-share-field").is_visible()
    assert page.locator("#live-pool").input_value() == "arithmetic"  # the served defaults (eqlm.council)
    assert page.locator("#live-learning_rate").input_value() == "0.1"
    page.locator("#live-compare").uncheck()
    chat(page, prompt, tokens=30)  # as the API test: code often opens with a line's indentation
    led, text = leaders_and_text(page)
    assert led.count(member) > 0.8 * len(led), led
    assert text.strip() and sum(c.isalpha() for c in text) >= 3, repr(text)
    # the reputation trace sits beside the influence: a distribution over the members before each token
    row = page.locator("#live-weights tbody tr").last.locator("td").all_inner_texts()
    assert sum(float(v) for v in row[5:7]) == pytest.approx(1, abs=2e-3)
    page.watch.assert_clean()


def test_without_memory_the_share_control_hides_and_the_table_has_no_reputations(page, served):
    page.goto("/council/")
    page.select_option("#live-memory", "none")
    assert not page.locator("#live-share-field").is_visible()
    assert not page.locator("#live-learning_rate-field").is_visible()
    page.select_option("#live-pool", "geometric")  # today's game: memory none, the geometric pool
    page.locator("#live-compare").uncheck()
    chat(page, "In the beginning")
    header = page.locator("#live-weights thead th").all_inner_texts()
    assert header == ["#", "Token", "Leader", "w eqlm-demo-anytime", "w eqlm-code", "Game updates", "Converged"]
    page.watch.assert_clean()
