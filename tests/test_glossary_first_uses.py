"""Every reader page links the first use of each glossary term in its main content to /glossary/, and only there:
never inside a link, code, a heading, a form control, an attribute or a verbatim quotation of the record."""

import re
from html.parser import HTMLParser

import pytest

from portal.glossary import SKIP_ELEMENTS, TERMS

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

GLOSSARY_LINK = re.compile(r"^/glossary/#([a-z-]+)$")
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class MainText(HTMLParser):
    """The text runs of a page's <main>, in order: (text, the glossary slug it links to or None, read as prose)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.in_main = False
        self.stack: list[tuple[str, str | None, bool]] = []
        self.runs: list[tuple[str, str | None, bool]] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "main" and attrs.get("id") == "main":
            self.in_main = True
            return
        if self.in_main and tag not in VOID:
            found = GLOSSARY_LINK.match(attrs.get("href") or "") if tag == "a" else None
            slug = found.group(1) if found and "glossary-term" in (attrs.get("class") or "") else None
            self.stack.append((tag, slug, "data-verbatim" in attrs))

    def handle_endtag(self, tag):
        if tag == "main":
            self.in_main = False
        elif self.in_main and self.stack:
            while self.stack and self.stack.pop()[0] != tag:
                pass

    def handle_data(self, data):
        if not self.in_main or not data.strip():
            return
        slug = next((s for _, s, _ in reversed(self.stack) if s), None)
        quoted = any(tag in SKIP_ELEMENTS or verbatim for tag, _, verbatim in self.stack)
        prose = slug is not None or not quoted
        self.runs.append((data, slug, prose))


def unlinked_first_uses(html: str) -> list[str]:
    parser = MainText()
    parser.feed(html)
    problems = []
    for term in TERMS:
        for text, slug, prose in parser.runs:
            if prose and term.regex.search(text):
                if slug != term.slug:
                    problems.append(f"{term.slug}: first used unlinked in {text.strip()[:80]!r}")
                break
        links = [slug for _, slug, _ in parser.runs if slug == term.slug]
        if len(links) > 1:
            problems.append(f"{term.slug}: linked {len(links)} times")
    return problems


def nav_links(html: str) -> list[str]:
    nav = re.search(r'<nav aria-label="Main">(.*?)</nav>', html, re.S).group(1)
    return re.findall(r'href="(/[^"#?]*)"', nav)


def test_the_check_finds_an_unlinked_first_use_and_a_second_link():
    linked = '<main id="main"><p><a class="glossary-term" href="/glossary/#picard">Picard</a> then Picard</p></main>'
    assert not unlinked_first_uses(linked)
    assert unlinked_first_uses('<main id="main"><p>Picard</p></main>')
    assert not unlinked_first_uses('<main id="main"><h2>Picard</h2><code>A1</code><label>EqLM</label></main>')
    twice = linked.replace("then Picard", '<a class="glossary-term" href="/glossary/#picard">Picard</a>')
    assert unlinked_first_uses(twice)


def test_every_page_from_the_navigation_links_each_terms_first_use(client, seeded_pages):
    from experiments_app.models import Experiment
    from experiments_app.seed import load_fixture

    load_fixture()
    urls = {url for url in seeded_pages if not url.startswith(("/admin/", "/lab/jobs/"))}
    urls |= set(nav_links(client.get("/").content.decode())) - {"/glossary/"}
    urls |= {f"/benchmarks/experiments/{slug}/" for slug in Experiment.objects.values_list("slug", flat=True)}
    found, linked_pages = {}, 0
    for url in sorted(urls):
        response = client.get(url)
        if response.status_code != 200 or not response["Content-Type"].startswith("text/html"):
            continue
        html = response.content.decode()
        linked_pages += 'class="glossary-term"' in html
        problems = unlinked_first_uses(html)
        if problems:
            found[url] = problems
    assert not found, "\n".join(f"{url}: {problems}" for url, problems in found.items())
    assert linked_pages >= 20


def test_the_glossary_page_itself_is_left_as_written(client):
    html = client.get("/glossary/").content.decode()
    assert 'class="glossary-term"' not in html and 'id="picard"' in html
