"""The glossary defines the portal's jargon, and finding and experiment pages link each term's first use to it."""

import re

import pytest

from portal.glossary import BY_SLUG, TERMS, explain_date_basis, explain_status, link_terms

REQUIRED = ["arms", "harness", "tarka", "spec", "h-numbers", "aa-cosine", "sandwich", "anytime", "picard",
            "anderson", "fixed-point", "bits-per-byte", "entry-header"]  # fmt: skip


def test_the_glossary_page_defines_every_term_with_an_anchor(client):
    html = client.get("/glossary/").content.decode()
    for slug in REQUIRED:
        assert slug in BY_SLUG
        assert f'id="{slug}"' in html, slug
    for term in TERMS:
        assert term.definition_html.split("<")[0][:40] in html


@pytest.mark.django_db
def test_the_glossary_is_linked_from_every_page_frame(client):
    html = client.get("/").content.decode()
    assert 'href="/glossary/"' in html


@pytest.mark.parametrize(
    "text, term",
    [("A1 against A3", "arms"), ("Tarka PENDING", "tarka"), ("SPEC 0018", "spec"), ("tests H2", "h-numbers"),
     ("the AA cosine", "aa-cosine"), ("the sandwich block", "sandwich"), ("Picard", "picard"),
     ("harness B", "harness"), ("2.1 bits/byte", "bits-per-byte"), ("a fixed point", "fixed-point")],
)  # fmt: skip
def test_a_terms_use_links_to_its_definition(text, term):
    assert f'href="/glossary/#{term}"' in link_terms(text, set())


def test_only_the_first_use_on_a_page_is_linked():
    seen: set[str] = set()
    first = link_terms("<p>Tarka reviewed it.</p><p>Tarka again.</p>", seen)
    second = link_terms("<p>Tarka once more.</p>", seen)
    assert first.count("glossary-term") == 1
    assert first.index("glossary-term") < first.index("again")
    assert "glossary-term" not in second


def test_text_inside_links_code_headings_and_tags_is_left_alone():
    html = '<h2>Picard</h2><a href="/x" title="Anderson">Anderson</a><code>A1</code><p class="sandwich">ok</p>'
    assert link_terms(html, set()) == html


def test_a_verbatim_quotation_of_the_record_is_left_alone_and_the_next_use_is_linked():
    quoted = '<span class="muted" data-verbatim>recorded as “exp13 (B1 seed-43 <b>checkpoint</b>)”</span>'
    linked = link_terms(f"<p>{quoted} then B1 again.</p>", set())
    assert quoted in linked
    assert linked.count("glossary-term") == 1 and linked.index("glossary-term") > linked.index("then")


def test_words_that_only_contain_a_term_are_not_linked():
    assert "glossary-term" not in link_terms("exp13_B1seed, H100, A100, SPECS and sandwiches", set())


def test_date_bases_and_reviewer_tags_are_explained_in_words():
    assert "cycle 30" in explain_date_basis("entry header (cycle 30)")
    assert "(" not in explain_date_basis("entry header (cycle 30)")
    assert explain_date_basis("operator sign-off") == "operator sign-off"
    assert "had not ruled" in explain_status("VALIDATED (3 seeds) · Tarka PENDING")
    assert explain_status("VALIDATED · SIGNED OFF") == ""


@pytest.mark.django_db
def test_a_finding_page_links_its_first_uses_and_explains_its_date_and_review(client):
    from findings_app.services import import_findings, read_fixture

    import_findings(read_fixture())
    html = client.get("/findings/F45/").content.decode()
    assert "(entry header (cycle 30))" not in html
    assert "work cycle 30" in html
    assert "the reviewer had not ruled" in html
    main = html.split('id="main"')[1]
    for slug in ("tarka", "spec", "arms", "entry-header"):
        assert len(re.findall(rf'href="/glossary/#{slug}"', main)) == 1, slug


@pytest.mark.django_db
def test_an_experiment_page_links_its_first_uses(client):
    from experiments_app.seed import load_fixture

    load_fixture()
    html = client.get("/benchmarks/experiments/depth-curve-v7/").content.decode()
    main = html.split('id="main"')[1]
    linked = set(re.findall(r'href="/glossary/#([a-z-]+)"', main))
    assert {"aa-cosine", "anderson", "picard"} <= linked
    for slug in linked:
        assert main.count(f'href="/glossary/#{slug}"') == 1, slug


@pytest.mark.django_db
def test_experiments_are_in_the_main_navigation(client):
    html = client.get("/").content.decode()
    nav = re.search(r'<nav aria-label="Main">(.*?)</nav>', html, re.S).group(1)
    assert 'href="/benchmarks/experiments/">Experiments</a>' in nav
    page = client.get("/benchmarks/experiments/").content.decode()
    assert 'href="/benchmarks/experiments/" aria-current="page">Experiments' in page
