"""Markdown in finding bodies and notes is rendered on the server and sanitised with nh3."""

import pytest

from findings_app.rendering import render_markdown

from .factories import make_figure, make_finding

pytestmark = pytest.mark.django_db


def test_markdown_becomes_html():
    html = render_markdown("Some **bold** text.\n\n- one\n- two")
    assert "<strong>bold</strong>" in html and "<li>one</li>" in html


def test_script_tags_never_survive():
    html = render_markdown("Hello <script>alert(1)</script> world")
    assert "<script" not in html and "alert(1)" not in html


def test_event_handler_attributes_are_removed():
    html = render_markdown('<p onclick="steal()">click</p> <a href="/x" onmouseover="steal()">x</a>')
    assert "onclick" not in html and "onmouseover" not in html and "steal" not in html


@pytest.mark.parametrize(
    "source",
    [
        "[click](javascript:alert(1))",
        '<a href="javascript:alert(1)">click</a>',
        '<a href="JaVaScRiPt:alert(1)">click</a>',
        "[click](data:text/html;base64,PHNjcmlwdD4=)",
    ],
)
def test_javascript_and_data_urls_are_dropped(source):
    html = render_markdown(source)
    assert "javascript:" not in html.lower() and "data:" not in html


def test_images_iframes_and_styles_are_not_allowed():
    html = render_markdown('![x](/x.png) <iframe src="/"></iframe> <style>body{}</style> <img src=x onerror=alert(1)>')
    assert "<img" not in html and "<iframe" not in html and "<style" not in html


def test_ordinary_links_are_kept():
    html = render_markdown("[the paper](https://example.org/paper)")
    assert 'href="https://example.org/paper"' in html


def test_finding_codes_in_text_link_to_their_pages():
    html = render_markdown("As F24 and F10-correction show, F1-score is not a code.")
    assert '<a class="finding-ref" href="/findings/F24/"' in html
    assert 'href="/findings/F10-correction/"' in html
    assert 'href="/findings/F1/"' not in html


def test_finding_codes_inside_code_spans_and_links_are_left_alone():
    html = render_markdown("`F24` and [see F45](/findings/F45/#fig-x)")
    assert "<code>F24</code>" in html
    assert html.count("<a ") == 1


def test_a_figure_reference_quotes_the_stored_value_and_links_to_its_row():
    finding = make_finding("F45")
    make_figure(finding, "mean ratio", "0.9582")
    html = render_markdown("The ratio is [[F45: mean ratio]].")
    assert '<a href="/findings/F45/#fig-mean-ratio"' in html and "<code>0.9582</code>" in html


def test_a_missing_figure_reference_says_not_recorded():
    html = render_markdown("The ratio is [[F45: no such figure]].")
    assert "<em>not recorded</em>" in html


def test_a_figure_value_is_escaped_when_quoted():
    finding = make_finding("F46")
    make_figure(finding, "odd", "<script>alert(1)</script>")
    html = render_markdown("[[F46: odd]]")
    assert "<script" not in html and "&lt;script&gt;" in html


def test_empty_text_renders_nothing():
    assert render_markdown("") == ""


def test_a_figure_reference_may_wrap_across_lines():
    finding = make_finding("F29")
    make_figure(finding, "oracle / best single / best aggregation", "83.1% / 62.6% / 64.2%")
    html = render_markdown("Given as [[F29: oracle / best single\n/ best aggregation]] in F29.")
    assert "<code>83.1% / 62.6% / 64.2%</code>" in html
