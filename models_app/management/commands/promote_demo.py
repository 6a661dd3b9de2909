"""Serve a trained checkpoint as the default model eqlm-demo, regenerating every file a served model needs."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = (
        "Copy CHECKPOINT (an EqLM trained from a recipe file, e.g. an experiment arm's latest.pt) to "
        "models/eqlm-demo/checkpoint.pt, write models/eqlm-demo/recipe.toml (its recipe with its overrides written in) "
        "and its card, then run export_onnx (ONNX folder, metrics, held-out slice, facts) and evaluate_convergence "
        "--write-fixture (its rows in fixtures/local_results.json). Needs a migrated database."
    )

    def add_arguments(self, parser):
        parser.add_argument("checkpoint", help="the checkpoint to serve as eqlm-demo")
        parser.add_argument("--card", default=None, help="a hand-written card JSON (default: generated prose)")
        parser.add_argument("--windows", type=int, default=None, help="held-out windows of the convergence rows")

    def handle(self, *args, **opts):
        from models_app.promote import CONVERGENCE_WINDOWS, PromotionError, promote

        def log(line: str) -> None:
            self.stdout.write(line)
            self.stdout.flush()

        try:
            written = promote(
                Path(opts["checkpoint"]),
                Path(opts["card"]) if opts["card"] else None,
                opts["windows"] or CONVERGENCE_WINDOWS,
                log=log,
            )
        except PromotionError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(self.style.SUCCESS("commit: " + " ".join(str(p) for p in written)))
