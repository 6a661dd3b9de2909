"""A real browser: the council page draws its plot, and the replay steps through questions from the keyboard."""

import re

import pytest

from tests.axe import serious_violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def transcript_index(page) -> int:
    return int(page.get_attribute("#transcript", "data-index"))


def test_open_the_council_then_step_through_three_questions_with_the_keyboard(page, council):
    page.goto("/council/")
    assert page.locator('[data-figure="council-accuracy"]').inner_text() == "0.6194"
    page.wait_for_selector("#council-cost-plot .main-svg")
    assert serious_violations(page) == []

    page.get_by_role("link", name="Step through the recorded questions one by one").click()
    page.wait_for_url(re.compile(r"/council/replay/"))
    assert transcript_index(page) == 0
    page.get_by_role("heading", level=1).click()  # focus on the page body, not a form control
    for expected in (1, 2, 3):
        page.keyboard.press("ArrowRight")
        page.wait_for_url(re.compile(rf"[?&]q={expected}(#|&|$)"))
        assert transcript_index(page) == expected
        assert page.locator("#council-position").inner_text() == f"question {expected + 1} of 40"
    page.keyboard.press("k")
    page.wait_for_url(re.compile(r"[?&]q=2(#|&|$)"))
    assert transcript_index(page) == 2
    assert page.evaluate("document.activeElement.id") == "transcript"
    assert serious_violations(page) == []

    page.focus("#id_domain")  # keys typed into a filter control do not move the replay
    page.keyboard.press("ArrowRight")
    page.wait_for_timeout(200)
    assert transcript_index(page) == 2
    page.watch.assert_clean()
