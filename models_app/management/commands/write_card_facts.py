"""Regenerate the bundled models' card facts (models/<id>/facts.json): training facts from their
checkpoints, evaluation figures from their metrics files and stored convergence rows."""

from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    requires_system_checks: list = []
    help = (
        "Read each bundled checkpoint's provenance (and the kept candidates, which may record earlier stages), place "
        "it in its recipe's stage chain, read what was measured on the served checkpoint (its metrics file and its "
        "rows in fixtures/local_results.json) and write models/<id>/facts.json, which /models/ and /demo/ show."
    )

    def add_arguments(self, parser):
        parser.add_argument("model_ids", nargs="*", help="default: every bundled model")

    def handle(self, *args, **opts):
        from models_app.bundled import bundled_models
        from models_app.card_facts import write_bundled_facts

        known = {model.id for model in bundled_models()}
        unknown = sorted(set(opts["model_ids"]) - known)
        if unknown:
            raise CommandError(f"not a bundled model: {', '.join(unknown)} (bundled: {', '.join(sorted(known))})")
        for path in write_bundled_facts(opts["model_ids"] or None):
            self.stdout.write(f"wrote {path}")
