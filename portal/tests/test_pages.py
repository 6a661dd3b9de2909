"""The shared page frame: navigation to every section, skip link, footer, no CDN assets."""

import re

import pytest

pytestmark = pytest.mark.django_db

SECTIONS = ["Home", "Findings", "Benchmarks", "Demo", "Lab", "Council", "Models", "API"]


def test_home_page_has_navigation_to_every_section(client):
    html = client.get("/").content.decode()
    nav = re.search(r'<nav aria-label="Main">(.*?)</nav>', html, re.S).group(1)
    for label in SECTIONS:
        assert f">{label}</a>" in nav


def test_every_section_in_the_navigation_answers(client):
    html = client.get("/").content.decode()
    nav = re.search(r'<nav aria-label="Main">(.*?)</nav>', html, re.S).group(1)
    for href in re.findall(r'href="([^"]+)"', nav):
        assert client.get(href).status_code == 200, href


def test_page_frame_has_skip_link_theme_toggle_and_footer_commit(client, settings):
    html = client.get("/").content.decode()
    assert 'class="skip-link" href="#main"' in html
    assert 'id="theme-toggle"' in html
    assert settings.GIT_COMMIT in html and settings.VERSION in html


def test_pages_load_no_asset_from_another_host(client):
    html = client.get("/").content.decode()
    for url in re.findall(r'(?:src|href)="([^"]+)"', html):
        assert not re.match(r"^(https?:)?//", url), url


def test_pages_carry_a_content_security_policy_without_inline_scripts(client):
    response = client.get("/")
    csp = response["Content-Security-Policy"]
    script_src = re.search(r"script-src ([^;]+)", csp).group(1)
    assert "'unsafe-inline'" not in script_src
    assert re.search(r"<script>(?!\s*</script>)", response.content.decode()) is None


def test_unknown_page_is_a_404_page(client):
    response = client.get("/no-such-page/")
    assert response.status_code == 404
