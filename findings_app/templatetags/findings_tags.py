"""Template helpers for the findings pages: sanitised Markdown and filter URLs."""

from django import template
from django.urls import reverse
from django.utils.http import urlencode
from django.utils.safestring import mark_safe

from findings_app.rendering import render_markdown

register = template.Library()


@register.filter(name="markdown")
def markdown_filter(text: str) -> str:
    """Render Markdown through the sanitiser (the only way finding text reaches a page as HTML)."""
    return mark_safe(render_markdown(text))  # nh3 has already cleaned it


@register.simple_tag
def timeline_url(filters: dict | None = None, **changes) -> str:
    """The timeline URL with `filters` changed by `changes` (an empty value removes that filter)."""
    query = {**(filters or {}), **changes}
    query = {key: value for key, value in query.items() if value}
    base = reverse("findings:index")
    return f"{base}?{urlencode(query)}" if query else base


@register.filter
def plain_number(value) -> str:
    """A parsed figure as a reader writes it: 0.7133, 268,000, 45.8 (no padding to six decimals)."""
    if value is None:
        return ""
    number = float(value)
    if number.is_integer() and abs(number) < 1e15:
        return f"{int(number):,}"
    text = f"{number:.6g}"
    if "e" in text:
        text = f"{number:.9f}".rstrip("0").rstrip(".")
    return text
