"""A real browser opens the portal: navigation is there, the console is clean, nothing leaves the machine."""

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_home_page_in_headless_chromium_has_navigation_and_no_errors(page):
    page.goto("/")
    nav = page.get_by_role("navigation", name="Main")
    assert nav.get_by_role("link", name="Findings").is_visible()
    assert nav.get_by_role("link", name="Lab").is_visible()
    page.watch.assert_clean()


def test_dark_mode_toggle_persists_across_pages(page):
    page.emulate_media(color_scheme="light")
    page.goto("/")
    assert page.evaluate("document.documentElement.dataset.theme") == "light"
    page.click("#theme-toggle")
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    page.goto("/api/")
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    page.watch.assert_clean()


def test_theme_follows_the_system_preference_until_chosen(page):
    page.emulate_media(color_scheme="dark")
    page.goto("/")
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
