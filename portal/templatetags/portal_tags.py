"""Template tags every page may use."""

from django import template
from django.utils.html import format_html

from portal.glossary import explain_date_basis, explain_status

register = template.Library()


@register.simple_tag
def table_region(*label):
    """The attributes of a wrapper whose table may scroll sideways: a focusable region named after its table, so
    a keyboard user can scroll it (axe: scrollable-region-focusable). The label's parts are joined:
    `<div {% table_region "Figures of " finding.code %}>`."""
    name = "".join(str(part) for part in label)
    return format_html('class="table-wrap" tabindex="0" role="region" aria-label="{} (scrolls sideways)"', name)


register.filter("explain_date_basis", explain_date_basis)
register.filter("explain_status", explain_status)
