"""Number formatting for the council pages: fixed places, signs, right/wrong badges."""

from django import template
from django.utils.safestring import mark_safe

register = template.Library()


@register.filter
def fixed(value, places=4):
    """A number with fixed decimal places; an em dash for a missing value."""
    if value is None or value == "":
        return "—"
    try:
        return f"{float(value):.{int(places)}f}"
    except (TypeError, ValueError):
        return value


@register.filter
def signed(value, places=4):
    """A number with an explicit sign (+0.0750, −0.0083); an em dash for a missing value."""
    if value is None or value == "":
        return "—"
    number = float(value)
    text = f"{abs(number):.{int(places)}f}"
    if float(text) == 0:
        return text
    return ("+" if number > 0 else "−") + text


@register.filter
def verdict(correct):
    """A badge that says right or wrong in words (colour only reinforces it)."""
    if correct is None:
        return mark_safe('<span class="badge badge-neutral">not recorded</span>')
    if correct:
        return mark_safe('<span class="badge badge-ok"><span aria-hidden="true">✓ </span>right</span>')
    return mark_safe('<span class="badge badge-bad"><span aria-hidden="true">✗ </span>wrong</span>')


@register.filter
def get(mapping, key):
    return mapping.get(key) if hasattr(mapping, "get") else None


@register.filter
def words(key):
    """A record key as words: win_abstain -> win abstain."""
    return str(key).replace("_", " ")
