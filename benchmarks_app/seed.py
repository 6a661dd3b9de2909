"""`manage.py seed` for benchmarks: the programme's result rows (fixtures/results.json) and the declared tables."""

import json
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from portal.models import JobStatus
from results.models import SourceFile
from results.records import clean_records, write_clean

from .declared import COMPARISONS
from .fixture import FORMAT, unpack_source
from .models import Comparison

FIXTURE = Path(settings.BASE_DIR) / "fixtures" / "results.json"


def load_fixture(path: Path = FIXTURE) -> tuple[int, int]:
    """Ingest every source of the fixture (idempotent): (files, new rows)."""
    data = json.loads(path.read_text())
    if data.get("format") != FORMAT:
        raise ValueError(f"{path} is not an {FORMAT} fixture")
    created = 0
    for source in data["sources"]:
        with transaction.atomic():
            record, _ = SourceFile.objects.get_or_create(
                sha256=source["sha256"],
                path_hint=source["path"],
                defaults={
                    "original_name": Path(source["path"]).name,
                    "detected_format": source["format"],
                    "requested_format": "fixture",
                    "status": JobStatus.DONE,
                    "progress": 1.0,
                    "finished_at": timezone.now(),
                    "summary": ("seeded from fixtures/results.json. " + "; ".join(source["notes"]))[:300],
                },
            )
            new = write_clean(clean_records(unpack_source(source)), record, source.get("run_configs"))
            if new:
                SourceFile.objects.filter(pk=record.pk).update(rows_created=new, rows_seen=len(source["rows"]))
            created += new
    return len(data["sources"]), created


def seed_comparisons() -> int:
    """Create the declared tables that do not exist yet (an admin's edits to existing ones are kept)."""
    created = 0
    for spec in COMPARISONS:
        table, was_created = Comparison.objects.get_or_create(slug=spec["slug"], defaults=spec)
        created += was_created
        if not was_created:
            _reword_known_problems(table)
    return created


OLD_PREFIX, NEW_PREFIX = "README: ", "Noted with the programme's result files: "


def _reword_known_problems(table: Comparison) -> None:
    """A table seeded before the checks spoke to readers: its "README: ..." known problems in the new words (an
    admin's other edits are kept)."""
    published = table.published if isinstance(table.published, list) else []
    changed = False
    for entry in published:
        text = entry.get("known_problem", "") if isinstance(entry, dict) else ""
        if text.startswith(OLD_PREFIX):
            entry["known_problem"] = NEW_PREFIX + text.removeprefix(OLD_PREFIX)
            changed = True
    if changed:
        Comparison.objects.filter(pk=table.pk).update(published=published)


def seed() -> str:
    files, rows = load_fixture()
    tables = seed_comparisons()
    return f"{rows} new result rows from {files} files; {tables} new declared tables ({len(COMPARISONS)} declared)"
