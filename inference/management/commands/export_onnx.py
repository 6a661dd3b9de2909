"""Export a checkpoint to ONNX (embed/step/head + manifest) and measure it; defaults are the demo model's paths."""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from eqlm.limits import DEFAULT_MODEL_ID


class Command(BaseCommand):
    help = "Export an EqLM checkpoint to ONNX graphs, measure held-out bits/byte with them, write metrics.json."
    requires_system_checks: list = []

    def add_arguments(self, parser):
        parser.add_argument("--checkpoint", default=str(settings.DEMO_MODEL_CHECKPOINT))
        parser.add_argument("--out", default=str(settings.DEMO_MODEL_ONNX_DIR))
        parser.add_argument("--metrics", default=str(Path(settings.DEMO_MODEL_CHECKPOINT).parent / "metrics.json"))
        parser.add_argument("--slice", default=str(Path(settings.DEMO_MODEL_CHECKPOINT).parent / "heldout_slice.txt"))
        parser.add_argument("--model-id", default=DEFAULT_MODEL_ID, help="the id written into the manifest and metrics")
        parser.add_argument("--int8", action="store_true", help="also write a dynamically quantised step graph")

    def handle(self, *args, **opts):
        from eqlm.checkpoint import CheckpointError
        from eqlm.export import export_demo
        from inference.bundled import bundled_model
        from inference.card_facts import write_facts

        if not Path(opts["checkpoint"]).exists():
            raise CommandError(f"no checkpoint at {opts['checkpoint']}")
        try:
            metrics = export_demo(
                Path(opts["checkpoint"]),
                Path(opts["out"]),
                Path(opts["metrics"]),
                Path(opts["slice"]),
                int8=opts["int8"],
                log=self.stdout.write,
                model_id=opts["model_id"],
            )
        except CheckpointError as exc:
            raise CommandError(str(exc))
        self.stdout.write(self.style.SUCCESS(f"wrote {opts['out']} and {opts['metrics']}"))
        bundled = bundled_model(opts["model_id"])
        if Path(opts["checkpoint"]).resolve() == bundled.checkpoint.resolve():  # the card's facts follow the export
            self.stdout.write(f"wrote {write_facts(bundled)}")
        bpb = metrics.get("held_out_bits_per_byte") or metrics["ci_slice"]["bits_per_byte"]
        self.stdout.write(" ".join(f"d{d}={v}" for d, v in bpb.items()))
