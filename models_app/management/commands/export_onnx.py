"""Export a checkpoint to ONNX (graphs + manifest) and measure it; the paths default to the bundled model's."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from eqlm.limits import DEFAULT_MODEL_ID


class Command(BaseCommand):
    help = (
        "Export a checkpoint (an EqLM, or an explicit transformer: one graph per layer) to ONNX graphs, measure "
        "held-out bits/byte with them, write its metrics file. Every path defaults to the bundled model --model-id's: "
        "models/<id>/checkpoint.pt to models/<id>/onnx/ and models/<id>/metrics.json."
    )
    requires_system_checks: list = []

    def add_arguments(self, parser):
        parser.add_argument("--model-id", default=DEFAULT_MODEL_ID, help="the id written into the manifest and metrics")
        parser.add_argument("--checkpoint", default=None, help="default: the bundled model's checkpoint")
        parser.add_argument("--out", default=None, help="default: the bundled model's ONNX folder")
        parser.add_argument("--metrics", default=None, help="default: the bundled model's metrics file")
        parser.add_argument("--slice", default=None, help="default: the bundled model's committed held-out slice")
        parser.add_argument(
            "--int8",
            action="store_true",
            help="also write int8 graphs (every graph, the tied matrix quantised once) and measure them",
        )

    def handle(self, *args, **opts):
        from eqlm.checkpoint import CheckpointError
        from eqlm.export import export_demo
        from models_app.bundled import bundled_model
        from models_app.card_facts import write_facts

        bundled = bundled_model(opts["model_id"])
        checkpoint = Path(opts["checkpoint"] or bundled.checkpoint)
        out = Path(opts["out"] or bundled.onnx_dir)
        metrics_path = Path(opts["metrics"] or bundled.metrics_path)
        if not checkpoint.exists():
            raise CommandError(f"no checkpoint at {checkpoint}")
        try:
            metrics = export_demo(
                checkpoint,
                out,
                metrics_path,
                Path(opts["slice"] or bundled.slice_path),
                int8=opts["int8"],
                log=self.stdout.write,
                model_id=opts["model_id"],
            )
        except CheckpointError as exc:
            raise CommandError(str(exc))
        self.stdout.write(self.style.SUCCESS(f"wrote {out} and {metrics_path}"))
        if checkpoint.resolve() == bundled.checkpoint.resolve():  # the card's facts follow the export
            self.stdout.write(f"wrote {write_facts(bundled)}")
        bpb = metrics.get("held_out_bits_per_byte") or metrics["ci_slice"]["bits_per_byte"]
        self.stdout.write(" ".join(f"d{d}={v}" for d, v in bpb.items()))
