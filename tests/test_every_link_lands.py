"""Every internal link lands: a crawl from the home page, two levels deep, plus every finding and every table page,
finds no link that fails and none that opens an empty listing."""

from html.parser import HTMLParser
from urllib.parse import urldefrag, urljoin, urlsplit

import pytest

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

# What an empty listing says: a run browser, a timeline or a table with nothing in it.
EMPTY_LISTING_MARKERS = [
    "No runs match.",
    "No finding matches these filters",
    "No rows yet",
    "data-empty-listing",
]
# Not pages: files the web server (not Django) serves, and the machine-facing /v1 surface.
SKIPPED_PREFIXES = ("/static/", "/media/", "/v1/")


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            href = dict(attrs).get("href")
            if href:
                self.hrefs.append(href)


def internal_links(page_url: str, html: str) -> set[str]:
    parser = Links()
    parser.feed(html)
    found = set()
    for href in parser.hrefs:
        if href.startswith(("mailto:", "javascript:", "#")):
            continue
        url, _ = urldefrag(urljoin(page_url, href))
        parts = urlsplit(url)
        if parts.netloc and parts.netloc != "testserver":
            continue
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        if path and not path.startswith(SKIPPED_PREFIXES):
            found.add(path)
    return found


def allowed_non_200(url: str, response) -> bool:
    """The admin sends a visitor to its login; the API answers its own errors in its documented shape."""
    if url.startswith("/admin/") and response.status_code == 302 and "/admin/login/" in response["Location"]:
        return True
    if url.startswith("/api/") and 400 <= response.status_code < 500:
        return response.get("Content-Type", "").startswith(("application/json", "application/problem+json"))
    return False


class Crawl:
    def __init__(self, client):
        self.client = client
        self.seen: dict[str, object] = {}
        self.failures: list[str] = []

    def visit(self, url: str, referrer: str) -> str:
        """The page's HTML ('' for anything that is not an HTML page); records failures once per URL."""
        if url in self.seen:
            return self.seen[url]
        response = self.client.get(url)
        html = ""
        if response.status_code == 200:
            if response.get("Content-Type", "").startswith("text/html"):
                html = response.content.decode()
                empty = [marker for marker in EMPTY_LISTING_MARKERS if marker in html]
                if empty:
                    self.failures.append(f"{url} (linked from {referrer}) is an empty listing: {empty[0]!r}")
        elif not allowed_non_200(url, response):
            self.failures.append(f"{url} (linked from {referrer}) answered {response.status_code}")
        self.seen[url] = html
        return html

    def follow_links_of(self, url: str, html: str) -> list[tuple[str, str]]:
        pages = []
        for link in sorted(internal_links(url, html)):
            pages.append((link, self.visit(link, url)))
        return pages


def test_every_link_two_levels_from_home_and_from_every_finding_and_table_lands(client, seeded_pages):
    from benchmarks_app.models import Comparison
    from benchmarks_app.tables import build_table
    from findings_app.models import Finding

    crawl = Crawl(client)
    home = crawl.visit("/", "the start")
    for url, html in crawl.follow_links_of("/", home):
        crawl.follow_links_of(url, html)
    pages = [f"/findings/{code}/" for code in Finding.objects.values_list("code", flat=True)]
    pages += [f"/benchmarks/{c.slug}/" for c in Comparison.objects.all() if not build_table(c)["empty"]]
    for url in pages:
        crawl.follow_links_of(url, crawl.visit(url, "the list of every finding and table"))
    assert len(crawl.seen) > 100
    assert not crawl.failures, "\n".join(crawl.failures)
