"""Train a demo EqLM (byte level): anytime-unrolled or equilibrium training, resumable (CPU, in the background)."""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError


def _depth_range(text: str) -> tuple[int, int]:
    low, _, high = text.partition("-")
    return int(low), int(high or low)


class Command(BaseCommand):
    requires_system_checks: list = []  # training must not depend on URL modules other helpers are editing

    help = (
        "Train a demo EqLM. --objective unrolled is cross-entropy at depths 4/8/12 (the original demo model); "
        "--objective equilibrium trains the fixed point (deep solve without gradient, a few iterations with it, "
        "anytime loss at low depths, residual and Jacobian penalties). Started again with the same --out and "
        "settings, it resumes from its last state and gives the same model as an uninterrupted run."
    )

    def add_arguments(self, parser):
        parser.add_argument("--out", default=str(Path(settings.BASE_DIR) / "var" / "train"))
        parser.add_argument(
            "--corpus", default="kjv", choices=["kjv", "code"], help="kjv: the bible; code: Django's source"
        )
        parser.add_argument("--corpus-file", default=None, help="a plain text file instead of --corpus")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--init-checkpoint", default=None, help="fine-tune from this checkpoint (its config is used)"
        )
        parser.add_argument("--d-model", type=int, default=64)
        parser.add_argument("--heads", type=int, default=4)
        parser.add_argument("--context", type=int, default=256)
        parser.add_argument("--default-depth", type=int, default=8)
        parser.add_argument("--state-skip", type=float, default=1.0, help="weight of z inside the block's LayerNorm")
        parser.add_argument("--depths", default="4,8,12", help="unrolled: depths that get cross-entropy")
        parser.add_argument("--objective", default="unrolled", choices=["unrolled", "equilibrium"])
        parser.add_argument(
            "--anytime-depths", default="4,8", help="equilibrium: low depths that also get cross-entropy"
        )
        parser.add_argument("--solve-depths", default="12-32", help="equilibrium: range of the no-gradient solve depth")
        parser.add_argument("--grad-iters", type=int, default=2)
        parser.add_argument("--residual-weight", type=float, default=None, help="default 0.1 unrolled, 1.0 equilibrium")
        parser.add_argument("--jacobian-weight", type=float, default=0.0)
        parser.add_argument("--jacobian-target", type=float, default=0.25, help="squared gain below which no penalty")
        parser.add_argument(
            "--slow-mode-weight",
            type=float,
            default=0.0,
            help="equilibrium: weight of the penalty on the map's gain along the solve's last step (its slowest mode)",
        )
        parser.add_argument(
            "--slow-mode-target", type=float, default=0.5, help="squared slow-mode gain below which no penalty"
        )
        parser.add_argument(
            "--early-gain-weight",
            type=float,
            default=0.0,
            help="equilibrium, --grad-iters > 0: weight of the penalty on the map's gain at the first iterates from "
            "zero (where float32 rounding is amplified most)",
        )
        parser.add_argument("--early-gain-iters", default="1,2,3", help="the iterates k (z_k) whose gain is held down")
        parser.add_argument(
            "--early-gain-target", type=float, default=9.0, help="squared early gain below which no penalty"
        )
        parser.add_argument(
            "--implicit-iters",
            type=int,
            default=0,
            help="equilibrium, --grad-iters > 0: Neumann terms of the implicit (IFT) gradient of the cross-entropy at "
            "the final state; 0: the phantom gradient alone",
        )
        parser.add_argument(
            "--distill-weight",
            type=float,
            default=0.0,
            help="equilibrium, --grad-iters > 0: weight of a soft cross-entropy from the anytime iterate at "
            "--distill-depth (the teacher, no gradient) to the final state",
        )
        parser.add_argument("--distill-depth", type=int, default=8, help="the teacher's depth for --distill-weight")
        parser.add_argument(
            "--teacher-checkpoint",
            default=None,
            help="with --distill-weight: distil from this checkpoint's logits at --distill-depth (into the final state "
            "and every anytime iterate) instead of the student's own anytime iterate",
        )
        parser.add_argument("--random-init", type=float, default=0.0, help="share of solves from a random state")
        parser.add_argument(
            "--warm-init",
            type=float,
            default=0.0,
            help="with --grad-iters N > 0: share of solves from the previous position's solved state",
        )
        parser.add_argument(
            "--settled-warm",
            type=float,
            default=0.0,
            help="with --grad-iters N > 0: weight of the warm-start term (from the predecessor's solved state, "
            "against the solved context; cross-entropy plus distance to the cold fixed point)",
        )
        parser.add_argument(
            "--settled-iters",
            default="4-12",
            help="no-gradient iterations of that warm solve, drawn per step: LOW-HIGH",
        )
        parser.add_argument("--batch-size", type=int, default=8)
        parser.add_argument("--lr", type=float, default=3e-3)
        parser.add_argument("--warmup-steps", type=int, default=100)
        parser.add_argument("--penalty-warmup-steps", type=int, default=300)
        parser.add_argument(
            "--steps", type=int, default=None, help="planned steps (the schedule); default from --max-minutes"
        )
        parser.add_argument("--max-minutes", type=float, default=60.0, help="safety stop; resume to finish")
        parser.add_argument("--checkpoint-minutes", type=float, default=5.0)
        parser.add_argument("--checkpoint-steps", type=int, default=200)
        parser.add_argument("--threads", type=int, default=2)

    def handle(self, *args, **opts):
        from eqlm.model import EqLMConfig
        from eqlm.training import TrainSettings, train

        low, high = _depth_range(opts["solve_depths"])
        settled_low, settled_high = _depth_range(opts["settled_iters"])
        if not 1 <= low <= high:
            raise CommandError("--solve-depths must be LOW-HIGH with 1 <= LOW <= HIGH")
        if not 0 <= settled_low <= settled_high:
            raise CommandError("--settled-iters must be LOW-HIGH with 0 <= LOW <= HIGH")
        config = EqLMConfig(
            d_model=opts["d_model"],
            n_heads=opts["heads"],
            d_mlp=4 * opts["d_model"],
            max_positions=opts["context"],
            default_depth=opts["default_depth"],
            train_depths=[int(d) for d in opts["depths"].split(",")],
            state_skip=opts["state_skip"],
        )
        residual_weight = opts["residual_weight"]
        if residual_weight is None:
            residual_weight = 1.0 if opts["objective"] == "equilibrium" else 0.1
        train_settings = TrainSettings(
            seed=opts["seed"],
            batch_size=opts["batch_size"],
            seq_len=opts["context"],
            lr=opts["lr"],
            warmup_steps=opts["warmup_steps"],
            penalty_warmup_steps=opts["penalty_warmup_steps"],
            steps=opts["steps"],
            max_minutes=opts["max_minutes"],
            checkpoint_minutes=opts["checkpoint_minutes"],
            checkpoint_steps=opts["checkpoint_steps"],
            threads=opts["threads"],
            objective=opts["objective"],
            anytime_depths=[int(d) for d in opts["anytime_depths"].split(",") if d],
            solve_depth_min=low,
            solve_depth_max=high,
            grad_iters=opts["grad_iters"],
            residual_weight=residual_weight,
            jacobian_weight=opts["jacobian_weight"],
            jacobian_target=opts["jacobian_target"],
            slow_mode_weight=opts["slow_mode_weight"],
            slow_mode_target=opts["slow_mode_target"],
            early_gain_weight=opts["early_gain_weight"],
            early_gain_iters=[int(k) for k in opts["early_gain_iters"].split(",") if k],
            early_gain_target=opts["early_gain_target"],
            implicit_iters=opts["implicit_iters"],
            distill_weight=opts["distill_weight"],
            distill_depth=opts["distill_depth"],
            teacher_checkpoint=opts["teacher_checkpoint"],
            random_init_prob=opts["random_init"],
            warm_init_prob=opts["warm_init"],
            settled_weight=opts["settled_warm"],
            settled_iters_min=settled_low,
            settled_iters_max=settled_high,
            corpus=opts["corpus"],
            init_checkpoint=opts["init_checkpoint"],
        )

        def log(line: str) -> None:
            self.stdout.write(line)
            self.stdout.flush()

        corpus_file = Path(opts["corpus_file"]) if opts["corpus_file"] else None
        try:
            path = train(config, train_settings, Path(opts["out"]), corpus_file, log)
        except ValueError as exc:  # settings that cannot train, or a resume of another run
            raise CommandError(str(exc)) from exc
        self.stdout.write(self.style.SUCCESS(f"checkpoint: {path}"))
