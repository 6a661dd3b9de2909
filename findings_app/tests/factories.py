"""Small builders for findings test data (the full record comes from the `record` fixture)."""

import datetime
import itertools

from findings_app.models import Figure, Finding, FindingLink, Reference, Review, Status, Theme

_numbers = itertools.count(101)


def make_finding(code: str | None = None, **fields) -> Finding:
    number = next(_numbers)
    defaults = {
        "code": code or f"F{number}",
        "date": datetime.date(2026, 8, 21),
        "status": Status.VALIDATED,
        "status_raw": "VALIDATED · SIGNED OFF",
        "review": Review.NONE,
        "theme": Theme.CONVERGENCE,
        "title": f"Finding number {number}",
        "summary": f"What finding {number} found, in a sentence.",
        "body": "A body in **Markdown**.",
    }
    defaults.update(fields)
    return Finding.objects.create(**defaults)


def make_figure(finding: Finding, name: str = "ratio", value: str = "0.5", context: str = "", **fields) -> Figure:
    position = fields.pop("position", finding.figures.count())
    return Figure.objects.create(finding=finding, name=name, value=value, context=context, position=position, **fields)


def make_reference(finding: Finding, kind: str, recorded_as: str) -> Reference:
    reference = Reference.from_recorded(finding, kind, recorded_as, position=finding.references.count())
    reference.save()
    return reference


def make_link(source: Finding, target: Finding, kind: str = FindingLink.Kind.RELATED) -> FindingLink:
    return FindingLink.objects.create(source=source, target=target, kind=kind)
