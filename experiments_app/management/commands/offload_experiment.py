"""`manage.py offload_experiment SLUG --plan DIR | --import DIR`: train an experiment's runs on another machine.

For a machine that cannot reach the broker or the database (an accelerator machine lent for a few minutes):

1. `--plan DIR` freezes the experiment (as a launch does: its registration is read-only from now on) and writes
   DIR/plan.json, one entry per arm and seed, and DIR/kjv.txt, the corpus dump for a machine without the package.
2. There, `python -m eqlm.offload DIR --device cuda --jobs N --max-minutes M` trains every run into DIR/runs/.
3. `--import DIR` takes each run that finished its every stage: it creates the run's row, copies its stages into the
   run's folder under MEDIA_ROOT, records the device and threads it trained on, and queues it. The worker finds the
   training finished (same run hash: same resolved recipe, corpus and start) and evaluates it, writing the rows.

A run that did not finish there is left out and reported. With `--continue-here` it is imported too, handed over to
this machine's workers (`eqlm.trainer.hand_over`: the change of threads or device and the step it happened at are kept
in its state and in its checkpoint's provenance), and they train the rest before evaluating it.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from experiments_app import services
from experiments_app.models import Experiment, TrainingRun
from experiments_app.runs import run_folder, stage_chain


def plan_entries(experiment: Experiment) -> list[dict]:
    entries = []
    for arm in experiment.arms:
        for seed in experiment.seeds:
            chain = stage_chain(arm, seed)
            entries.append(
                {
                    "folder": f"{arm['label']}-seed{seed}",
                    "arm": arm["label"],
                    "seed": seed,
                    "recipe": arm["recipe"],
                    "stage": arm["stage"],
                    "overrides": [*arm["overrides"], f"seed={seed}"],
                    "stages": [s.name for s in chain],
                    "steps": [s.steps for s in chain],
                    "corpora": sorted({"file" if s.corpus_file else s.data["corpus"]["name"] for s in chain}),
                }
            )
    return entries


@dataclass
class Trained:
    finished: bool
    why: str = ""
    identity: dict | None = None  # the threads and device of the last stage trained there
    stopped_stage: str = ""  # the stage that stopped part-way (its state can be handed over)


def trained_stages(folder: Path, entry: dict) -> Trained:
    """How far the run got there: every stage finished, or where it stopped."""
    import torch

    from eqlm.trainer import finished_checkpoint

    identity: dict = {}
    for name, steps in zip(entry["stages"], entry["steps"], strict=True):
        state = folder / name / "state.pt"
        if not state.exists():
            return Trained(False, f"stage {name} has no saved state", identity)
        saved = torch.load(state, map_location="cpu", weights_only=True)
        identity = saved.get("identity", {})
        if finished_checkpoint(saved, folder / name / "latest.pt", steps) is None:
            return Trained(False, f"stage {name} stopped at step {saved['step']} of {steps}", identity, name)
    return Trained(True, "", identity)


class Command(BaseCommand):
    help = "Train an experiment's runs on another machine: write a plan folder, or import the runs trained from it."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        mode = parser.add_mutually_exclusive_group(required=True)
        mode.add_argument("--plan", type=Path, help="write DIR/plan.json and DIR/kjv.txt")
        mode.add_argument("--import", dest="import_dir", type=Path, help="import the finished runs in DIR/runs/")
        parser.add_argument(
            "--continue-here",
            action="store_true",
            help="also import the runs that stopped part-way, handed over to this machine's workers (recorded in "
            "their state and provenance: such a run is no longer bit-equal to an uninterrupted one)",
        )

    def handle(self, *args, slug: str, plan: Path | None, import_dir: Path | None, continue_here: bool, **options):
        experiment = Experiment.objects.filter(slug=slug).first()
        if experiment is None:
            raise CommandError(f"no experiment {slug!r}")
        if plan is not None:
            self.write_plan(experiment, plan)
        else:
            self.import_runs(experiment, import_dir, continue_here)

    def write_plan(self, experiment: Experiment, root: Path) -> None:
        from eqlm.corpus import kjv_text
        from eqlm.offload import PLAN_VERSION
        from eqlm.provenance import git_commit

        entries = plan_entries(experiment)  # resolves every recipe first: a bad arm fails before anything is frozen
        experiment = services.freeze(experiment)
        root.mkdir(parents=True, exist_ok=True)
        if any("kjv" in e["corpora"] for e in entries):  # a file-based corpus travels by its path in the recipe
            (root / "kjv.txt").write_text(kjv_text(), encoding="utf-8")
        body = {
            "version": PLAN_VERSION,
            "experiment": experiment.slug,
            "registration_hash": experiment.registration_hash,
            "commit": git_commit(),
            "runs": entries,
        }
        (root / "plan.json").write_text(json.dumps(body, indent=1))
        self.stdout.write(f"{experiment.slug}: {len(entries)} runs planned in {root} (the experiment is now frozen)")

    def import_runs(self, experiment: Experiment, root: Path, continue_here: bool = False) -> None:
        if not (root / "plan.json").exists():
            raise CommandError(f"{root / 'plan.json'} is missing: pass the plan folder the runs were trained from")
        body = json.loads((root / "plan.json").read_text())
        if body.get("experiment") != experiment.slug:
            raise CommandError(f"{root} holds the plan of {body.get('experiment')!r}, not of {experiment.slug!r}")
        if body.get("registration_hash") != experiment.registration_hash:
            raise CommandError(f"{root} was planned from another registration of {experiment.slug!r}")
        from portal.celery import app

        if app.conf.task_always_eager:
            self.stdout.write(
                "no broker (CELERY_BROKER_URL is unset): each run trains and is evaluated in this process"
            )
        expected = {e["folder"]: e for e in plan_entries(experiment)}
        services.freeze(experiment)
        imported = 0
        for entry in body["runs"]:
            if expected.get(entry["folder"]) != entry:
                raise CommandError(f"{entry['folder']}: the plan's arm no longer resolves to the same stages here")
            trained = trained_stages(root / "runs" / entry["folder"], entry)
            if not trained.finished and not (continue_here and trained.stopped_stage):
                self.stdout.write(f"  {entry['folder']}: left out ({trained.why})")
                continue
            imported += self.import_one(experiment, entry, root / "runs" / entry["folder"], trained)
        self.stdout.write(f"{experiment.slug}: {imported} runs imported and queued")

    def import_one(self, experiment: Experiment, entry: dict, source: Path, trained: Trained) -> int:
        """Create the run's row, put its stages in its folder and queue it, all or nothing: a failure leaves no row
        and no folder behind."""
        arm = next(a for a in experiment.arms if a["label"] == entry["arm"])
        moved: list[Path] = []
        try:
            with transaction.atomic():
                run, created = services.run_row(experiment, arm, entry["seed"])
                target = run_folder(run)
                if not created and (run.step or run.slice_number or target.exists()):
                    self.stdout.write(f"  {entry['folder']}: left out (its run already trained here: {run.status})")
                    return 0
                if target.exists():
                    raise CommandError(f"{target} exists but belongs to no run of {experiment.slug}: move it away")
                message = self.place(source, target, run, trained, moved)
        except BaseException:
            for folder in moved:
                shutil.rmtree(folder, ignore_errors=True)
            raise
        self.stdout.write(f"  {entry['folder']}: imported into {target}: {message}")
        return 1

    def place(self, source: Path, target: Path, run: TrainingRun, trained: Trained, moved: list[Path]) -> str:
        """Copy the stages beside the target, hand an unfinished one over, update the row, then rename the copy into
        place last (the caller removes whatever `moved` names when anything fails)."""
        from eqlm.trainer import hand_over, resolve_device
        from experiments_app.tasks import train_slice

        partial = target.with_name(target.name + ".importing")
        shutil.rmtree(partial, ignore_errors=True)
        moved.append(partial)
        shutil.copytree(source, partial, ignore=shutil.ignore_patterns("*.log", "*.tmp"))
        identity, message = trained.identity or {}, "trained on another machine; queued for evaluation"
        if not trained.finished:  # handed over: this machine's workers train the rest
            device = resolve_device(settings.EXPERIMENT_TRAIN_DEVICE)
            identity = {"threads": settings.EXPERIMENT_TRAIN_THREADS, "device": device}
            record = hand_over(partial / trained.stopped_stage / "state.pt", **identity)
            message = f"handed over at step {record['step']} from {record['from']}; queued to train the rest here"
        TrainingRun.objects.filter(pk=run.pk).update(
            device=str(identity.get("device", ""))[:16],
            threads=int(identity.get("threads", 1)),
            progress_message=message,
        )
        partial.rename(target)
        moved.append(target)
        transaction.on_commit(lambda pk=run.pk: train_slice.delay(pk, 0))
        return message
