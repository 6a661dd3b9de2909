"""Views for the findings record and the home page."""

import csv
from itertools import groupby

from django.db.models import Prefetch
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import urlencode

from .home import BOTTOM_LINE, HEADLINES
from .models import Finding, FindingLink, RecordNote, Reference, canonical_code
from .services import bottom_line, filter_findings, headline_figures, review_overview, theme_overview

LATEST_COUNT = 6


def _timeline_prefetch(queryset):
    experiments = Reference.objects.filter(kind=Reference.Kind.EXPERIMENT).order_by("position")
    return queryset.prefetch_related(Prefetch("references", queryset=experiments, to_attr="experiment_refs"))


def home(request):
    return render(
        request,
        "home.html",
        {
            "section": "home",
            "bottom_line": bottom_line(BOTTOM_LINE),
            "headlines": headline_figures(HEADLINES),
            "notes": RecordNote.objects.all(),
            "themes": theme_overview(),
            "reviews": review_overview(),
            "finding_count": Finding.objects.count(),
            "latest": Finding.objects.order_by("-date", "-sequence")[:LATEST_COUNT],
        },
    )


def index(request):
    result = filter_findings(request.GET)
    if request.GET.get("format") == "csv":
        return _timeline_csv(result.findings)
    findings = list(_timeline_prefetch(result.findings))
    _attach_stored_experiments(ref for finding in findings for ref in finding.experiment_refs)
    query = urlencode(result.filters)
    context = {
        "section": "findings",
        "form": result.form,
        "filters": result.filters,
        "findings": findings,
        "days": [(day, list(entries)) for day, entries in groupby(findings, key=lambda finding: finding.date)],
        "total": Finding.objects.count(),
        "themes": (themes := theme_overview({k: v for k, v in result.filters.items() if k != "theme"})),
        "themes_total": sum(theme["count"] for theme in themes),
        "query": query,
        "csv_url": f"{reverse('findings:index')}?{urlencode({**result.filters, 'format': 'csv'})}",
        "json_url": f"{reverse('findings-api:list')}{'?' + query if query else ''}",
    }
    template = "findings/_timeline.html" if request.GET.get("fragment") else "findings/index.html"
    return render(request, template, context)


def _canonical_or_404(code: str) -> str:
    canonical = canonical_code(code)
    if canonical is None:
        raise Http404("No such finding.")
    return canonical


def detail(request, code):
    canonical = _canonical_or_404(code)
    if canonical != code:
        return redirect("findings:detail", canonical, permanent=True)
    finding = get_object_or_404(
        Finding.objects.prefetch_related("figures", "references", "links__target", "backlinks__source", "notes"),
        code=canonical,
    )
    stated_here = {(link.kind, link.target_id) for link in finding.links.all()}
    stated_elsewhere = [
        link
        for link in finding.backlinks.all()
        if (FindingLink.INVERSE[link.kind], link.source_id) not in stated_here and link.source_id != finding.pk
    ]
    links_by_kind = [
        (label, [link.target for link in finding.links.all() if link.kind == kind])
        for kind, label in FindingLink.Kind.choices
    ]
    previous, following = _neighbours(finding)
    _attach_stored_experiments(finding.references.all())
    context = {
        "section": "findings",
        "finding": finding,
        "links_by_kind": [(label, targets) for label, targets in links_by_kind if targets],
        "stated_elsewhere": stated_elsewhere,
        "references_by_kind": _references_by_kind(finding.references.all()),
        "previous": previous,
        "next": following,
        "tables": recomputing_tables(finding.code),
    }
    return render(request, "findings/detail.html", context)


def recomputing_tables(code: str) -> list[dict]:
    """The benchmark tables that cite this finding and recompute its figures from stored rows."""
    from benchmarks_app.models import Comparison

    return [
        {"slug": c.slug, "title": c.title, "url": reverse("benchmarks:detail", args=[c.slug])}
        for c in Comparison.objects.only("slug", "title", "findings")
        if code in (c.findings or [])
    ]


def _attach_stored_experiments(references) -> None:
    """Give each reference the stored experiment names once, so its links need no query of their own."""
    from results.experiment_names import stored_experiments

    stored = stored_experiments()
    for ref in references:
        ref.stored_experiments = stored


def _neighbours(finding: Finding) -> tuple[Finding | None, Finding | None]:
    """The findings before and after this one on the timeline."""
    order = list(Finding.objects.timeline().values_list("pk", flat=True))
    at = order.index(finding.pk)
    wanted = {pk for pk in (order[at - 1] if at else None, order[at + 1] if at + 1 < len(order) else None) if pk}
    rows = Finding.objects.in_bulk(wanted)
    return (rows.get(order[at - 1]) if at else None, rows.get(order[at + 1]) if at + 1 < len(order) else None)


def _references_by_kind(references) -> list[tuple[str, list[Reference]]]:
    grouped = []
    for kind, label in Reference.Kind.choices:
        rows = [ref for ref in references if ref.kind == kind]
        if rows:
            grouped.append((label, rows))
    return grouped


def figures_csv(request, code):
    canonical = _canonical_or_404(code)
    finding = get_object_or_404(Finding, code=canonical)
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{finding.code}-figures.csv"'
    writer = csv.writer(response)
    writer.writerow(["finding", "name", "value", "context", "number", "interval_low", "interval_high", "unit"])
    for figure in finding.figures.all():
        writer.writerow(
            [
                finding.code,
                figure.name,
                figure.value,
                figure.context,
                _blank_none(figure.number),
                _blank_none(figure.interval_low),
                _blank_none(figure.interval_high),
                figure.unit,
            ]
        )
    return response


def _timeline_csv(findings):
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="findings.csv"'
    writer = csv.writer(response)
    writer.writerow(["code", "date", "status", "review", "theme", "title", "summary", "experiments", "url"])
    for finding in _timeline_prefetch(findings):
        writer.writerow(
            [
                finding.code,
                finding.date.isoformat(),
                finding.status,
                finding.review,
                finding.theme,
                finding.title,
                finding.summary,
                " ".join(ref.recorded_as for ref in finding.experiment_refs),
                finding.get_absolute_url(),
            ]
        )
    return response


def _blank_none(value):
    return "" if value is None else repr(value)
