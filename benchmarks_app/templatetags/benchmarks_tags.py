"""Template filters for benchmark figures, using the statistics module's one rounding rule."""

from django import template

from benchmarks_app.tables.queries import is_recorded
from results.stats import format_figure

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


NOT_RECORDED = "not recorded in the source file"


@register.inclusion_tag("benchmarks/_provenance_cell.html")
def provenance_cell(value, uploaded=False):
    """A config hash or commit, shortened, or the reason it is missing."""
    return {"value": value if is_recorded(value) else "", "uploaded": uploaded, "reason": NOT_RECORDED}
