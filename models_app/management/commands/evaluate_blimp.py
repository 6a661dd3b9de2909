"""Evaluate a checkpoint on BLiMP at several depths, in this process, recording an EvaluationRun and result rows."""

import hashlib
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from eqlm.limits import DEFAULT_MODEL_ID
from models_app.bundled import bundled_model


class Command(BaseCommand):
    help = "BLiMP accuracy (strict log P(good) > log P(bad), ties reported) of an EqLM checkpoint at several depths."

    def add_arguments(self, parser):
        parser.add_argument("--checkpoint", default=str(bundled_model(DEFAULT_MODEL_ID).checkpoint))
        parser.add_argument("--depths", default="1,2,4,8,12")
        parser.add_argument("--paradigms", default="", help="comma-separated paradigm names (default: all)")
        parser.add_argument("--limit", type=int, default=None, help="first N pairs of each paradigm")
        parser.add_argument("--blimp-dir", default="", help="default: the BLIMP_DIR setting")
        parser.add_argument("--name", default="", help="registry name for a checkpoint not yet registered")
        parser.add_argument("--model", default="", help="a registered model's slug (instead of --checkpoint)")
        parser.add_argument(
            "--protocol",
            default="",
            choices=["", "programme", "full"],
            help="score a programme checkpoint by a protocol: 'programme' (its 5 paradigms x 200 pairs) or 'full'",
        )

    def handle(self, *args, **opts):
        if opts["protocol"] or opts["model"]:
            return self.handle_protocol(opts)
        return self.handle_depths(opts)

    def handle_protocol(self, opts):
        """A registered model scored by a protocol in this process; ends with one JSON line."""
        import json

        from models_app.models import RegisteredModel
        from models_app.programme_eval import create_protocol_run, run_protocol_evaluation
        from models_app.services import RegistryError

        model = RegisteredModel.objects.filter(slug=opts["model"]).first()
        if model is None:
            raise CommandError(f"no registered model {opts['model']!r} (manage.py import_model FILE registers one)")
        try:
            run = create_protocol_run(model, opts["protocol"] or "programme", None, opts["limit"])
        except RegistryError as exc:
            raise CommandError(str(exc)) from None
        if opts["blimp_dir"]:
            run.blimp_dir = opts["blimp_dir"]
            run.save(update_fields=["blimp_dir"])
        try:
            run = run_protocol_evaluation(run.pk)
        except Exception as exc:  # noqa: BLE001 - the row records it; the command exits non-zero
            run.mark_failed(f"{type(exc).__name__}: {exc}")
            raise CommandError(f"the evaluation failed: {exc}") from None
        r = run.results
        self.stdout.write(json.dumps({k: r[k] for k in ("num_correct", "num_total", "accuracy", "device", "seconds")}))

    def handle_depths(self, opts):
        from eqlm.checkpoint import CheckpointError, load_checkpoint
        from models_app.models import EvaluationRun, RegisteredModel
        from models_app.services import (
            RegistryError,
            parse_depths,
            parse_paradigms,
            register_demo_model,
            run_evaluation,
        )

        path = Path(opts["checkpoint"]).resolve()
        if not path.exists():
            raise CommandError(f"no checkpoint at {path}")
        blimp_dir = opts["blimp_dir"] or str(settings.BLIMP_DIR)
        try:
            depths = parse_depths(opts["depths"])
            paradigms = parse_paradigms(opts["paradigms"], Path(blimp_dir))
            _, data = load_checkpoint(path)
        except (RegistryError, CheckpointError) as exc:
            raise CommandError(str(exc))
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        if path == bundled_model(DEFAULT_MODEL_ID).checkpoint.resolve():
            register_demo_model()
        model = RegisteredModel.objects.filter(sha256=sha).first()
        if model is None:
            name = opts["name"] or path.stem
            model = RegisteredModel.objects.create(
                slug=f"{path.stem[:60]}-{sha[:8]}",
                name=name,
                kind=RegisteredModel.Kind.UPLOADED,
                model_class=data["model_class"],
                checkpoint_path=str(path),
                sha256=sha,
                size_bytes=path.stat().st_size,
                config=data["config_dict"],
                provenance={k: v for k, v in data["provenance"].items() if isinstance(v, str | int | float | None)},
                notes="registered by manage.py evaluate_blimp",
            )
        run = EvaluationRun.objects.create(
            model=model,
            depths=depths,
            paradigms=paradigms,
            pair_limit=opts["limit"],
            blimp_dir=opts["blimp_dir"],
        )
        try:
            run = run_evaluation(run.pk)
        except Exception as exc:
            run.mark_failed(f"{type(exc).__name__}: {exc}")
            raise
        self.stdout.write(f"model {model.slug} on {run.device}; rows written: {run.rows_written}")
        self.stdout.write(f"{'depth':>5} {'accuracy':>9} {'se':>7} {'ties':>5} {'pairs':>6}")
        for depth, summary in run.results.items():
            o = summary["overall"]
            self.stdout.write(f"{depth:>5} {o['accuracy']:>9.4f} {o['se']:>7.4f} {o['ties']:>5} {o['n']:>6}")
