"""A training step through an experiment's job against the bare loop: the same recipe, stage, seed and steps, one run.

Usage: .venv/bin/python bench/experiment_overhead.py [--recipe depth-anytime] [--stage NAME] [--set key=value ...]
       [--steps 30] [--rounds 3] [--seed 42]

The bare side calls eqlm.trainer.train_stage directly (no progress callback). The job side runs one slice of an
experiment's TrainingRun exactly as the `train` worker does (experiments_app.training.run_slice: the lease, the
recipe resolved from the arm, a heartbeat every 10 steps that writes progress and renews the lease, the release),
against a scratch SQLite database, with EXPERIMENT_SLICE_STEPS = --steps. Both train on one thread from scratch, in
rounds that alternate which side goes first (the machine is shared), and the medians are compared:

- per step: the training loop's wall time (from the trainer's "run hash" line to its "stopped at step" line), the
  figure the target is about, and its CPU time (this process), which a busy machine disturbs less;
- the job's own code inside the loop: the time its heartbeats took, as a share of the loop's wall time;
- per slice: everything each side did, setup included (corpus, model, and for the job its database work).

Target (issue 28): the job is at most 5% slower per step (ratio <= 1.05).
"""

import argparse
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SCRATCH = Path(tempfile.mkdtemp(prefix="experiment-overhead-"))
os.environ.update(
    DJANGO_SETTINGS_MODULE="portal.settings",
    DATABASE_URL=f"sqlite:///{SCRATCH / 'bench.sqlite3'}",
    VAR_DIR=str(SCRATCH),
    MEDIA_ROOT=str(SCRATCH / "media"),
    CELERY_TASK_ALWAYS_EAGER="1",
    EXPERIMENT_TRAIN_THREADS="1",
    EXPERIMENT_TRAIN_DEVICE="cpu",
)
os.environ.pop("CELERY_BROKER_URL", None)

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402


class Clock:
    """Timestamps (wall and this process's CPU) of the trainer's log lines: where its loop starts and stops."""

    def __init__(self):
        self.start = self.stop = (0.0, 0.0)

    def __call__(self, line: str) -> None:
        if "run hash" in line:
            self.start = (time.perf_counter(), time.process_time())
        elif line.startswith("stopped at step"):
            self.stop = (time.perf_counter(), time.process_time())

    @property
    def loop(self) -> tuple[float, float]:
        return self.stop[0] - self.start[0], self.stop[1] - self.start[1]


class ClockHandler(logging.Handler):
    def __init__(self, clock: Clock):
        super().__init__()
        self.clock = clock

    def emit(self, record):
        self.clock(record.getMessage().split(": ", 1)[-1])


def bare(stage, steps: int, folder: Path) -> tuple[tuple[float, float], float, float]:
    from eqlm.trainer import train_stage

    clock = Clock()
    began = time.perf_counter()
    outcome = train_stage(stage, folder, threads=1, device="cpu", stop_after=steps, log=clock)
    assert outcome.step == steps, outcome
    return clock.loop, time.perf_counter() - began, 0.0


def job(experiment, seed: int, steps: int) -> tuple[tuple[float, float], float, float]:
    from experiments_app import training
    from experiments_app.models import TrainingRun
    from experiments_app.training import run_folder, run_slice

    heartbeats = [0.0]
    beat = training.Heartbeat.__call__

    def timed(self, info):  # instrumentation only: the time the job's own code takes inside the loop
        began = time.perf_counter()
        try:
            beat(self, info)
        finally:
            heartbeats[0] += time.perf_counter() - began

    TrainingRun.objects.all().delete()
    arm = experiment.arms[0]
    run = TrainingRun.objects.create(experiment=experiment, arm_label=arm["label"], seed=seed, arm_hash=arm["hash"])
    shutil.rmtree(run_folder(run), ignore_errors=True)
    clock = Clock()
    handler = ClockHandler(clock)
    logger = logging.getLogger("experiments_app.training")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    training.Heartbeat.__call__ = timed
    try:
        began = time.perf_counter()
        did = run_slice(run.pk, 0, send_next=lambda number: None)
        total = time.perf_counter() - began
    finally:
        logger.removeHandler(handler)
        training.Heartbeat.__call__ = beat
    run.refresh_from_db()
    assert did == "trained" and run.step == steps, (did, run.step, run.error)
    return clock.loop, total, heartbeats[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default="depth-anytime")
    parser.add_argument("--stage", default="")
    parser.add_argument("--set", action="append", default=[], dest="overrides")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    call_command("migrate", verbosity=0)
    settings.EXPERIMENT_SLICE_STEPS = args.steps
    settings.EXPERIMENT_SLICE_SECONDS = 3600

    from experiments_app.services import register_experiment
    from experiments_app.training import stage_chain

    experiment = register_experiment(
        {
            "slug": "overhead",
            "title": "Overhead of the experiment job",
            "hypothesis": "A step through the job costs at most 5% more than a bare step.",
            "arms": [{"label": "a", "recipe": args.recipe, "stage": args.stage, "overrides": args.overrides}],
            "seeds": [args.seed],
            "criterion": {"op": "value", "of": {"arm": "a", "metric": "m"}, "cmp": "<", "value": 0},
        }
    )
    stage = stage_chain(experiment.arms[0], args.seed)[0]  # the job's first slice trains the chain's first stage
    print(
        f"recipe {args.recipe}, stage {stage.name} (hash {stage.recipe_hash}), {args.steps} steps, one thread, "
        f"{args.rounds} alternating rounds"
    )
    sides = {"bare": [], "job": []}
    for r in range(args.rounds):
        order = ("bare", "job") if r % 2 == 0 else ("job", "bare")  # neither side always runs first
        for side in order:
            if side == "bare":
                sides["bare"].append(bare(stage, args.steps, SCRATCH / f"bare-{r}"))
            else:
                sides["job"].append(job(experiment, args.seed, args.steps))
        b, j = sides["bare"][-1], sides["job"][-1]
        print(
            f"round {r + 1}: bare {b[0][0] / args.steps * 1000:.1f} ms/step ({b[0][1] / args.steps * 1000:.1f} CPU), "
            f"job {j[0][0] / args.steps * 1000:.1f} ms/step ({j[0][1] / args.steps * 1000:.1f} CPU), "
            f"heartbeats {j[2] * 1000:.1f} ms"
        )
    wall = {k: statistics.median(v[0][0] for v in runs) for k, runs in sides.items()}
    cpu = {k: statistics.median(v[0][1] for v in runs) for k, runs in sides.items()}
    whole = {k: statistics.median(v[1] for v in runs) for k, runs in sides.items()}
    share = statistics.median(v[2] / v[0][0] for v in sides["job"])
    ratio = wall["job"] / wall["bare"]
    per = 1000 / args.steps
    print(
        f"per step, wall (median): bare {wall['bare'] * per:.1f} ms, job {wall['job'] * per:.1f} ms, ratio {ratio:.3f}"
    )
    print(
        f"per step, CPU (median): bare {cpu['bare'] * per:.1f} ms, job {cpu['job'] * per:.1f} ms, "
        f"ratio {cpu['job'] / cpu['bare']:.3f}"
    )
    print(f"the job's own code inside the loop (heartbeats): {share:.2%} of its wall time")
    print(
        f"per slice, setup included (median): bare {whole['bare']:.1f} s, job {whole['job']:.1f} s, "
        f"ratio {whole['job'] / whole['bare']:.3f}"
    )
    print(f"target: job/bare per step <= 1.05 (wall): {'holds' if ratio <= 1.05 else 'MISSED'}")
    shutil.rmtree(SCRATCH, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
