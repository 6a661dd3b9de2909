"""Template tags every page may use."""

from django import template
from django.urls import reverse
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import mark_safe

from portal.glossary import explain_date_basis, explain_status, link_terms

register = template.Library()


@register.simple_tag
def table_region(*label):
    """The attributes of a wrapper whose table may scroll sideways: a focusable region named after its table, so
    a keyboard user can scroll it (axe: scrollable-region-focusable). The label's parts are joined:
    `<div {% table_region "Figures of " finding.code %}>`."""
    name = "".join(str(part) for part in label)
    return format_html('class="table-wrap" tabindex="0" role="region" aria-label="{} (scrolls sideways)"', name)


@register.simple_tag(takes_context=True)
def glossary_links(context, text):
    """`text` (escaped unless already safe) with the first use on this page of each glossary term linked to
    /glossary/: `{% glossary_links finding.body|markdown %}`. Calls on one page share what they have linked."""
    request = context.get("request")
    seen = getattr(request, "glossary_seen", None)
    if seen is None:
        seen = set()
        if request is not None:
            request.glossary_seen = seen
    return mark_safe(link_terms(str(conditional_escape(text)), seen, reverse("glossary")))


register.filter("explain_date_basis", explain_date_basis)
register.filter("explain_status", explain_status)
