"""`manage.py import_results PATH... [--path-hint HINT ...] [--format F]`: the upload service, run synchronously."""

from django.core.management.base import BaseCommand, CommandError

from benchmarks_app.parsers import FORMATS, IngestError
from benchmarks_app.uploads import import_path


class Command(BaseCommand):
    help = "Ingest result files (harness A/B, exp31, budget sweeps, lm-eval, generic CSV/JSONL) synchronously."

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+", help="result files; a results.json picks up the config.yaml beside it")
        parser.add_argument(
            "--path-hint",
            action="append",
            default=[],
            help="path in the programme's results folder, one per file in order "
            "(e.g. exp10_5090/exp10_seed42/results.json)",
        )
        parser.add_argument("--format", default="", choices=["", *FORMATS], help="skip content detection")

    def handle(self, *args, paths, path_hint, format, **options):
        if path_hint and len(path_hint) != len(paths):
            raise CommandError("Give one --path-hint per file, or none.")
        failed = 0
        for index, path in enumerate(paths):
            hint = path_hint[index] if path_hint else ""
            try:
                source, duplicate = import_path(path, path_hint=hint, fmt=format)
            except (IngestError, OSError) as exc:
                failed += 1
                self.stderr.write(f"{path}: {getattr(exc, 'message', exc)}")
                continue
            if source.status == "failed":
                failed += 1
                where = "; ".join(
                    f"{e.get('pointer') or ('line ' + str(e.get('line')) if e.get('line') else '')}: {e['message']}"
                    for e in source.errors[:5]
                )
                self.stderr.write(f"{path}: FAILED {source.error} [{where}]")
            elif duplicate:
                self.stdout.write(f"{path}: identical bytes already ingested as upload #{source.pk}; nothing new")
            else:
                self.stdout.write(f"{path}: {source.detected_format}, {source.summary}")
        if failed:
            raise CommandError(f"{failed} file(s) failed; nothing was stored for them.")
