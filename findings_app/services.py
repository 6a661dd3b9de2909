"""Services of the findings record: filtering the timeline, loading the fixture, and the home page's numbers."""

import datetime
from dataclasses import dataclass
from pathlib import Path

import yaml
from django.conf import settings
from django.db import transaction

from .forms import FindingFilterForm
from .models import Figure, Finding, FindingLink, RecordNote, Reference, Review, Theme

FIXTURE_PATH = Path(settings.BASE_DIR) / "fixtures" / "findings.yaml"

# The fixture's provenance lists, in display order, and the Reference kind each one fills.
REFERENCE_LISTS = {
    "hypotheses": Reference.Kind.HYPOTHESIS,
    "research_questions": Reference.Kind.RESEARCH_QUESTION,
    "experiments": Reference.Kind.EXPERIMENT,
    "specs_adrs": Reference.Kind.SPEC_ADR,
    "config_hashes": Reference.Kind.CONFIG_HASH,
    "commits": Reference.Kind.COMMIT,
}
LINK_LISTS = [kind.value for kind in FindingLink.Kind]


# --- the timeline's filters --------------------------------------------------------------------


@dataclass
class FilteredFindings:
    form: FindingFilterForm
    findings: object  # a FindingQuerySet
    filters: dict[str, str]


def filter_findings(params) -> FilteredFindings:
    """Validate the filters in `params` and apply the valid ones; invalid ones stay on the form as errors."""
    form = FindingFilterForm(params)
    form.is_valid()
    filters = form.filters()
    findings = Finding.objects.filtered(**filters).timeline()
    return FilteredFindings(form=form, findings=findings, filters=filters)


# --- loading the fixture -----------------------------------------------------------------------


def read_fixture(path: Path = FIXTURE_PATH) -> dict:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml reads it ten times faster
    with open(path, encoding="utf-8") as handle:
        return yaml.load(handle, Loader=loader)


@transaction.atomic
def import_findings(data: dict, *, refresh: bool = False) -> dict[str, int]:
    """Load the fixture's findings (with their figures, links and provenance) and record notes.

    Idempotent: by default a finding or note already in the database is left exactly as it is, so
    edits made in the admin survive `manage.py seed`; with `refresh=True` each one is overwritten
    from the fixture, its figures, links and provenance replaced by what the fixture lists.
    """
    existing = set(Finding.objects.values_list("code", flat=True))
    entries = [entry for entry in data["findings"] if refresh or entry["code"] not in existing]
    loaded = {}
    for entry in entries:
        finding, _ = Finding.objects.update_or_create(code=entry["code"], defaults=_finding_fields(entry))
        loaded[finding.code] = finding
    Figure.objects.filter(finding__in=loaded.values()).delete()
    Reference.objects.filter(finding__in=loaded.values()).delete()
    FindingLink.objects.filter(source__in=loaded.values()).delete()

    by_code = {finding.code: finding for finding in Finding.objects.all()}
    figures, references, links = [], [], []
    for entry in entries:
        finding = loaded[entry["code"]]
        for position, item in enumerate(entry.get("figures", [])):
            figures.append(Figure(finding=finding, position=position, **item).derive())
        for list_name, kind in REFERENCE_LISTS.items():
            for position, recorded in enumerate(entry.get("provenance", {}).get(list_name, [])):
                references.append(Reference.from_recorded(finding, kind, recorded, position))
        for kind in LINK_LISTS:
            for position, target in enumerate(entry.get("links", {}).get(kind, [])):
                links.append(FindingLink(source=finding, target=by_code[target], kind=kind, position=position))
    Figure.objects.bulk_create(figures)
    Reference.objects.bulk_create(references)
    FindingLink.objects.bulk_create(links)

    existing_notes = set(RecordNote.objects.values_list("slug", flat=True))
    notes = 0
    for position, item in enumerate(data.get("notes", [])):
        if item["slug"] in existing_notes and not refresh:
            # Keep the note as edited, but re-attach findings that this run (re)created.
            note = RecordNote.objects.get(slug=item["slug"])
            note.findings.add(*[loaded[code] for code in item.get("findings", []) if code in loaded])
            continue
        note, _ = RecordNote.objects.update_or_create(
            slug=item["slug"], defaults={"title": item["title"], "body": item["body"].strip(), "position": position}
        )
        note.findings.set([by_code[code] for code in item.get("findings", [])])
        notes += 1
    return {
        "findings": len(loaded),
        "unchanged": len(data["findings"]) - len(loaded),
        "figures": len(figures),
        "references": len(references),
        "links": len(links),
        "notes": notes,
    }


def _finding_fields(entry: dict) -> dict:
    date = entry["date"]
    return {
        "date": date if isinstance(date, datetime.date) else datetime.date.fromisoformat(date),
        "date_basis": entry.get("date_basis", ""),
        "status": entry["status"],
        "status_raw": entry.get("status_raw", ""),
        "review": entry.get("review", Review.NONE),
        "tarka_verdict": entry.get("tarka_verdict") or "",
        "verdict_note": entry.get("verdict_note") or "",
        "theme": entry["theme"],
        "theme_note": entry.get("theme_note") or "",
        "title": entry["title"],
        "summary": entry["summary"].strip(),
        "body": entry.get("body", "").strip(),
    }


# --- the home page -----------------------------------------------------------------------------


@dataclass
class Headline:
    label: str
    code: str
    name: str
    figure: Figure | None
    table: dict | None = None
    checks: list[dict] | None = None


def headline_figures(spec) -> list[Headline]:
    """The home page's numbers: each (label, finding code, figure name, table slug) read from its stored Figure row,
    with the published-vs-recomputed checks of the one table that recomputes it (never a table quoting another's)."""
    figures = Figure.objects.lookup((code, name) for _, code, name, _ in spec)
    by_table = benchmark_checks_by_table({slug for *_, slug in spec if slug})
    headlines = []
    for label, code, name, slug in spec:
        headline = Headline(label, code, name, figures.get((code, name)))
        table = by_table.get(slug)
        if table is not None and headline.figure is not None:
            headline.table = table
            headline.checks = quoted_checks(headline.figure, table["checks"])
        headlines.append(headline)
    return headlines


def benchmark_checks_by_table(slugs: set[str]) -> dict[str, dict]:
    """{table slug: {title, url, checks}}: each table's own published-vs-recomputed checks (copies left out)."""
    from benchmarks_app.models import Comparison
    from benchmarks_app.tables import build_table

    out: dict[str, dict] = {}
    for comparison in Comparison.objects.filter(slug__in=slugs):
        url = f"/benchmarks/{comparison.slug}/"
        checks = [
            {**item, "table_url": url} for item in build_table(comparison)["checks"] if not item.get("source_table")
        ]
        out[comparison.slug] = {"slug": comparison.slug, "title": comparison.title, "url": url, "checks": checks}
    return out


def bottom_line(spec) -> list[dict]:
    """The programme's bottom line: each statement with the table (or finding) a reader checks it against."""
    from benchmarks_app.models import Comparison

    titles = dict(Comparison.objects.filter(slug__in={slug for _, _, slug, _ in spec}).values_list("slug", "title"))
    return [
        {
            "title": title,
            "text": text,
            "code": code,
            "table": {"url": f"/benchmarks/{slug}/", "title": titles[slug]} if slug in titles else None,
        }
        for title, text, slug, code in spec
    ]


def quoted_checks(figure: Figure, checks: list[dict]) -> list[dict]:
    """The checks whose published figure the headline quotes, in its value or its context (whole numbers only:
    "0.72" is not found inside "0.723")."""
    import re

    text = f"{figure.value} {figure.context}"
    found, seen = [], set()
    for item in checks:
        published = item["published"].strip()
        if not published or published in seen:
            continue
        if re.search(rf"(?<![\d.]){re.escape(published)}(?!\d)", text):
            seen.add(published)
            found.append(item)
    return found


def theme_overview(filters: dict | None = None) -> list[dict]:
    """Each theme with its count of findings, within `filters` when given (so no chip offers an empty timeline)."""
    counts = (Finding.objects.filtered(**filters) if filters else Finding.objects).counts_by("theme")
    return [{"value": value, "label": label, "count": counts.get(value, 0)} for value, label in Theme.choices]


def review_overview() -> list[dict]:
    counts = Finding.objects.counts_by("review")
    return [{"value": value, "label": label, "count": counts.get(value, 0)} for value, label in Review.choices]
