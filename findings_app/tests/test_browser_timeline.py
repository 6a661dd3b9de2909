"""A real browser on the findings pages: the timeline loads, a filter narrows it, a finding opens."""

import re

import pytest
from playwright.sync_api import expect

from findings_app.models import Finding
from findings_app.services import import_findings
from tests.axe import serious_violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def loaded(fixture_data):
    import_findings(fixture_data)
    return fixture_data


def entries(page):
    return page.locator("li.timeline-entry")


def test_timeline_loads_a_filter_click_narrows_it_and_a_finding_opens(page, loaded):
    page.goto("/findings/")
    assert entries(page).count() == 57

    page.get_by_role("navigation", name="Filter by theme").get_by_role("link", name=re.compile("^The council")).click()
    expect(entries(page)).to_have_count(17)
    assert "theme=council" in page.url
    assert page.locator(".timeline-count").inner_text().startswith("17 of 57")
    assert page.locator('a.chip[aria-current="true"]').inner_text().startswith("The council")
    assert page.locator("#id_theme").input_value() == "council"

    page.locator("li.timeline-entry h3 a").first.click()
    expect(page).to_have_url(re.compile(r"/findings/F28/$"))
    assert page.locator("h1").inner_text().startswith("F28")
    assert page.locator("table.figures tbody tr").count() > 0
    page.watch.assert_clean()


def test_search_and_the_back_button_keep_the_timeline_in_step_with_the_url(page, loaded):
    page.goto("/findings/")
    page.fill("#id_q", "auction")
    page.press("#id_q", "Enter")
    expect(page.locator(".timeline-count")).to_contain_text("of 57 findings match")
    assert "q=auction" in page.url
    assert 0 < entries(page).count() < 57
    page.go_back()
    expect(entries(page)).to_have_count(57)
    page.watch.assert_clean()


def test_a_figure_permalink_scrolls_to_and_highlights_its_row(page, loaded):
    page.goto("/findings/F45/#fig-mean-ratio")
    row = page.locator("tr#fig-mean-ratio")
    assert row.is_visible()
    assert page.evaluate("document.querySelector(':target').id") == "fig-mean-ratio"
    page.watch.assert_clean()


def test_the_findings_pages_have_no_serious_accessibility_violations(page, loaded):
    for path in ["/", "/findings/", "/findings/F24/"]:
        page.goto(path)
        assert serious_violations(page) == [], path


def test_the_admin_preview_renders_as_the_editor_types(page, loaded, staff_user, live_server, client):
    client.force_login(staff_user)
    session = client.cookies["sessionid"].value
    page.context.add_cookies([{"name": "sessionid", "value": session, "url": live_server.url}])
    page.goto(f"/admin/findings_app/finding/{Finding.objects.get(code='F1').pk}/change/")
    preview = page.locator(".markdown-preview-body")
    expect(preview.locator("p").first).to_be_visible()
    page.fill("textarea[name=body]", "Now **bold**, see F24. <script>window.bad = 1</script>")
    expect(preview.locator("strong")).to_have_text("bold")
    expect(preview.locator('a[href="/findings/F24/"]')).to_have_count(1)
    assert page.evaluate("window.bad") is None
