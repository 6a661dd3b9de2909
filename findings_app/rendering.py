"""Markdown to safe HTML for finding bodies and record notes: rendered on the server, then sanitised with nh3.

Finding codes in the text (F24, F10-correction) become links to their pages, and [[F45: mean ratio]]
quotes a stored figure exactly as recorded (or says "not recorded"), so notes never retype a number.
"""

import re
import xml.etree.ElementTree as etree

import markdown
import nh3
from django.urls import reverse
from markdown.treeprocessors import Treeprocessor

from .models import CODE_PATTERN, Figure

ALLOWED_TAGS = {
    "a", "abbr", "blockquote", "br", "code", "del", "em", "h2", "h3", "h4", "hr", "li", "ol", "p", "pre",
    "strong", "sub", "sup", "table", "tbody", "td", "th", "thead", "tr", "ul",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {"a": {"href", "title", "class"}, "abbr": {"title"}, "code": {"class"}, "td": {"align"}}
URL_SCHEMES = {"http", "https", "mailto"}
FIGURE_REF = re.compile(rf"\[\[\s*({CODE_PATTERN})\s*:\s*([^\]]+?)\s*\]\]")
NOT_RECORDED = "not recorded"


class FindingCodeLinks(Treeprocessor):
    """F24 -> <a href="/findings/F24/">F24</a> in running text; links, code and pre blocks are left alone."""

    SKIP = {"a", "code", "pre"}
    CODE = re.compile(rf"(?<![\w/#-])({CODE_PATTERN})(?![\w-])")

    def run(self, root):
        self._walk(root)

    def _walk(self, element):
        if element.tag in self.SKIP:
            return
        children = list(element)
        if element.text:
            element.text, links = self._split(element.text)
            for index, link in enumerate(links):
                element.insert(index, link)
        for child in children:
            self._walk(child)
            if child.tail:
                child.tail, links = self._split(child.tail)
                at = list(element).index(child) + 1
                for offset, link in enumerate(links):
                    element.insert(at + offset, link)

    def _split(self, text: str) -> tuple[str, list[etree.Element]]:
        """The text before the first code, and one <a> per code carrying the text after it as its tail."""
        parts = self.CODE.split(text)
        links = []
        for index in range(1, len(parts), 2):
            link = etree.Element("a", {"href": reverse("findings:detail", args=[parts[index]]), "class": "finding-ref"})
            link.text, link.tail = parts[index], parts[index + 1]
            links.append(link)
        return parts[0], links


class FindingsExtension(markdown.Extension):
    def extendMarkdown(self, md):
        md.treeprocessors.register(FindingCodeLinks(md), "finding_code_links", 15)  # after inline patterns (20)


def sanitise(html: str) -> str:
    """Only the tags a finding needs survive: no script, no event handlers, no javascript: URLs."""
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer",
        strip_comments=True,
    )


def expand_figure_refs(text: str) -> str:
    """Replace every [[F45: mean ratio]] by the stored value as inline code linked to its row."""

    def key(code: str, name: str) -> tuple[str, str]:
        return code, " ".join(name.split())  # a reference may wrap across lines

    figures = Figure.objects.lookup({key(code, name) for code, name in FIGURE_REF.findall(text)})

    def replace(match: re.Match) -> str:
        figure = figures.get(key(match[1], match[2]))
        if figure is None:
            return f"*{NOT_RECORDED}*"
        return f"[`{figure.value}`]({figure.get_absolute_url()})"

    return FIGURE_REF.sub(replace, text)


def render_markdown(text: str) -> str:
    """Markdown source -> sanitised HTML, with finding codes linked and figure references expanded."""
    if not text:
        return ""
    html = markdown.markdown(expand_figure_refs(text), extensions=["extra", "sane_lists", FindingsExtension()])
    return sanitise(html)
