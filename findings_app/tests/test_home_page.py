"""The home page's numbers come from stored Figure rows, and its notes say where the record is rough."""

import re
from pathlib import Path

import pytest
from django.conf import settings

from findings_app.home import BOTTOM_LINE, HEADLINES
from findings_app.models import Figure, Finding, RecordNote

pytestmark = pytest.mark.django_db


def test_every_headline_number_is_read_from_its_figure_row(client, record):
    html = client.get("/").content.decode()
    for _, code, name, _ in HEADLINES:
        figure = Figure.objects.get(finding__code=code, name=name)
        assert f'href="{figure.get_absolute_url()}">{figure.value}</a>' in html.replace("&#x27;", "'"), (code, name)


def test_changing_a_stored_figure_changes_the_home_page(client, record):
    Figure.objects.filter(finding__code="F45", name="mean ratio").update(value="0.1234")
    assert ">0.1234</a>" in client.get("/").content.decode()


def test_a_missing_figure_reads_not_recorded_and_the_page_still_renders(client, record):
    Figure.objects.filter(finding__code="F45", name="mean ratio").delete()
    Finding.objects.filter(code="F55").delete()
    response = client.get("/")
    assert response.status_code == 200
    assert response.content.decode().count("not recorded") >= 2


def test_the_home_page_renders_with_an_empty_database(client):
    response = client.get("/")
    assert response.status_code == 200
    assert "not recorded" in response.content.decode()


def test_no_number_is_typed_into_the_home_template_or_the_headline_labels():
    template = (Path(settings.BASE_DIR) / "templates" / "home.html").read_text()
    assert re.search(r"\d", re.sub(r"</?h[1-6]\b", "", template)) is None
    for label, *_ in HEADLINES:
        assert re.search(r"\d", label.replace("F44", "").replace("Qwen2.5-7B", "")) is None, label


def test_the_notes_on_the_record_are_shown_with_their_quoted_figures(client, record):
    html = client.get("/").content.decode()
    for note in RecordNote.objects.all():
        assert note.title.replace("'", "&#x27;") in html
    f29 = Figure.objects.get(finding__code="F29", name="oracle / best single / best aggregation").value
    f32 = Figure.objects.get(finding__code="F32", name="any-player oracle vs best single").value
    assert f"<code>{f29}</code>" in html and f"<code>{f32}</code>" in html
    assert "0.628 and 0.488" in html  # quoted on the programme's home page, found in no finding


def test_the_anytime_figures_quoted_on_the_programme_home_page_are_in_no_finding(record):
    quoted = re.compile(r"(?<![\d.])0\.(628|488)(?!\d)")
    for finding in Finding.objects.prefetch_related("figures"):
        texts = [finding.summary, finding.body] + [f"{fig.value} {fig.context}" for fig in finding.figures.all()]
        assert not any(quoted.search(text) for text in texts), finding.code


def test_reviewer_sign_off_is_counted_from_the_findings(client, record):
    html = client.get("/").content.decode()
    pending = Finding.objects.filter(review="pending").count()
    assert re.search(rf'href="/findings/\?review=pending">[^<]+</a></td><td class="num">{pending}</td>', html)


def test_the_seed_count_note_is_also_on_the_finding_page(client, record):
    html = client.get("/findings/F45/").content.decode()
    assert "On the record: F45&#x27;s seed count is stated two ways" in html


def test_each_headline_quotes_the_recomputed_figure_beside_the_published_one_with_the_benchmarks_badge(client, record):
    from django.core.cache import cache

    from benchmarks_app.seed import seed

    cache.clear()
    seed()
    html = client.get("/").content.decode()
    f45 = card(html, "F45")
    assert "95% interval [0.939, 0.977]" in f45  # the published interval the headline quotes...
    assert re.search(
        r'<span class="badge badge-ok">✓ matches</span>\s*95% interval: published \[0.939, 0.977\], '
        r'recomputed <a href="/benchmarks/f45-equal-compute/">0.9391–0.9773</a>',
        f45,
    )  # ...and beside it the recomputed one, marked as /benchmarks/ marks it
    assert re.search(r'<span class="badge badge-ok">✓ matches</span>\s*mean ratio: published 0.9582', f45)
    # A headline no benchmark table recomputes says so instead of staying silent.
    assert "not recomputable" in card(html, "F54")


def card(html: str, code: str) -> str:
    """The first headline card of a finding."""
    start = html.index(f'<div class="card headline" data-finding="{code}"')
    return html[start : html.index("</div>", start)]


def test_the_home_page_leads_with_the_bottom_line_in_the_programmes_order(client, record):
    html = client.get("/").content.decode().replace("&#x27;", "'")
    assert html.index("The programme's bottom line") < html.index("The record in numbers")
    positions = [html.index(title) for title, *_ in BOTTOM_LINE]
    assert positions == sorted(positions)
    # The exchange rate, the billion-parameter boundary, where the programme closed: each from stored figures.
    for code, name in [("F45", "mean ratio"), ("F55", "kill gate"), ("F55", "Pythia-410m token budget on one card")]:
        figure = Figure.objects.get(finding__code=code, name=name)
        quoted = f'href="{figure.get_absolute_url()}" rel="noopener noreferrer"><code>{figure.value}</code>'
        assert quoted in html, (code, name)


def test_each_headline_card_links_the_table_that_recomputes_its_figure_and_no_other(client, record):
    import re as _re

    from django.core.cache import cache

    from benchmarks_app.models import Comparison
    from benchmarks_app.seed import seed
    from benchmarks_app.tables import build_table

    cache.clear()
    seed()
    html = client.get("/").content.decode()
    for _, code, name, slug in HEADLINES:
        figure = Figure.objects.get(finding__code=code, name=name)
        start = html.index(f'href="{figure.get_absolute_url()}">')
        block = html[start : html.index("</div>", start)]
        tables = set(_re.findall(r'href="(/benchmarks/[^"]+)"', block))
        if not slug:
            assert tables == set(), (code, name)
            continue
        assert tables == {f"/benchmarks/{slug}/"}, (code, name, tables)
        table = build_table(Comparison.objects.get(slug=slug))
        assert code in [link["code"] for link in table["findings"]], (code, slug)
        quoted = [c for c in table["checks"] if c["published"] in f"{figure.value} {figure.context}"]
        assert quoted, (code, name, slug)  # the table holds a check of the very number the card shows
    # F44's "0.72 and 0.73" card links the compute audit, not the portal's own head-to-head.
    assert "/benchmarks/local-head-to-head/" not in card(html, "F44")
    assert 'href="/benchmarks/f44-compute-audit/"' in card(html, "F44")
