"""Template filters for benchmark figures, using the statistics module's one rounding rule."""

from django import template

from benchmarks_app.stats import format_figure

register = template.Library()


@register.filter
def figure(value, decimals: int = 4) -> str:
    return format_figure(value, int(decimals)) if isinstance(value, int | float) else "–"


@register.filter
def signed(value, decimals: int = 4) -> str:
    if not isinstance(value, int | float):
        return "–"
    text = format_figure(value, int(decimals))
    return text if text.startswith("-") else f"+{text}"
