"""The worker side of an experiment's run: slices of training under a lease, then the evaluation's result rows.

A run is a chain of messages on the `train` queue, each carrying the slice number the row expects:

- a slice takes the run's lease (a conditional UPDATE: same slice number, lease free or expired), trains for at
  most EXPERIMENT_SLICE_SECONDS from the saved training state (`train_stage` resumes from out_dir/state.pt), sends
  the next slice's message, then moves the row to that slice number and frees the lease;
- its progress callback is the heartbeat: it writes step, loss and time left, renews the lease, and stops the
  slice when the run was cancelled or its lease was taken over;
- a message whose slice number is behind the row's is stale (a redelivered copy of a slice already run) and does
  nothing; one whose lease is held waits until the holder's lease lapses (a dead worker) or the slice moves on
  (a live one), so a redelivered slice of a live run never trains twice at once;
- the last slice evaluates the trained checkpoint and writes its result rows once (unique constraints).

Torch and the trainer are imported inside the functions: the web process never loads them.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from portal.models import JobStatus

from .models import CANCELLED, TrainingRun

log = logging.getLogger(__name__)
Phase = TrainingRun.Phase
SLICE = Path(settings.BASE_DIR) / "inference" / "demo" / "heldout_slice.txt"
POLL_SECONDS = 1.0
HEARTBEAT_SECONDS = 5.0


class Stop(Exception):
    """The slice stops early: the run was cancelled, or another worker took its lease over."""


def run_folder(run: TrainingRun) -> Path:
    """Where a run keeps its training state and checkpoints (MEDIA_ROOT, which workers elsewhere see too). The row's
    id is part of it: an experiment registered again under a deleted one's slug never meets the old run's state."""
    return Path(settings.MEDIA_ROOT) / "experiments" / run.experiment.slug / f"{run.arm_label}-seed{run.seed}-{run.pk}"


def arm_of(run: TrainingRun) -> dict:
    return next(a for a in run.experiment.arms if a["label"] == run.arm_label)


def stage_chain(arm: dict, seed: int) -> list:
    """The resolved stages the arm trains, in order: its stage and the stages it starts from (`from`), each with the
    arm's overrides and the run's seed (as `manage.py train --set` resolves a chain)."""
    from eqlm.recipe import load_recipe

    recipe = load_recipe(arm["recipe"])
    overrides = [*arm["overrides"], f"seed={seed}"]
    return [recipe.resolve(name, overrides) for name in recipe.chain(arm["stage"] or None)]


# --- the lease -------------------------------------------------------------------------------------------------


def _lease_until():
    return timezone.now() + timedelta(seconds=settings.EXPERIMENT_LEASE_SECONDS)


def acquire(run_id: int, slice_number: int, token: str) -> bool:
    now = timezone.now()
    free = Q(lease_until__isnull=True) | Q(lease_until__lt=now)
    return bool(
        TrainingRun.objects.filter(
            free,
            pk=run_id,
            slice_number=slice_number,
            cancel_requested=False,
            status__in=(JobStatus.QUEUED, JobStatus.RUNNING),
        ).update(lease_token=token, lease_until=_lease_until())
    )


def wait_for_lease(run_id: int, slice_number: int, token: str) -> str:
    """'acquired', or why this message has nothing to do ('stale', 'finished', 'cancelled', 'held')."""
    deadline = time.monotonic() + 1.5 * settings.EXPERIMENT_LEASE_SECONDS
    while True:
        if acquire(run_id, slice_number, token):
            return "acquired"
        run = TrainingRun.objects.filter(pk=run_id).first()
        if run is None or run.is_finished:
            return "finished"
        if run.cancel_requested:
            end_cancelled(run)
            return "cancelled"
        if run.slice_number > slice_number:
            return "stale"
        if time.monotonic() > deadline:  # renewed all along: a live worker holds it and will send the next slice
            return "held"
        time.sleep(POLL_SECONDS)


def release(run_id: int, token: str, **fields) -> int:
    return TrainingRun.objects.filter(pk=run_id, lease_token=token).update(lease_token="", lease_until=None, **fields)


def end_cancelled(run: TrainingRun) -> None:
    TrainingRun.objects.filter(pk=run.pk).exclude(status__in=(JobStatus.DONE, JobStatus.FAILED)).update(
        status=JobStatus.FAILED,
        error=CANCELLED.format(step=run.step, planned=run.planned_steps or "?"),
        finished_at=timezone.now(),
        lease_token="",
        lease_until=None,
    )


class Heartbeat:
    """The trainer's progress callback: writes progress, renews the lease, stops a cancelled or taken-over slice.

    It writes at most every HEARTBEAT_SECONDS (and a third of the lease), whatever the step rate: one small UPDATE
    per interval costs a tiny recipe's slice as little as a large one's.
    """

    def __init__(self, run: TrainingRun, token: str, stage_count: int):
        self.run, self.token, self.stage_count = run, token, stage_count
        self.interval = min(HEARTBEAT_SECONDS, settings.EXPERIMENT_LEASE_SECONDS / 3)
        self.last = -math.inf

    def __call__(self, info: dict) -> None:
        now = time.monotonic()
        if now - self.last < self.interval:
            return
        self.last = now
        step, planned = int(info.get("step", 0)), int(info.get("planned_steps") or 0)
        stage = f"stage {self.run.stage_index + 1}/{self.stage_count}, " if self.stage_count > 1 else ""
        eta = info.get("eta_seconds")
        message = f"{stage}step {step}/{planned}" + (f", about {eta / 60:.0f} min left" if eta is not None else "")
        fraction = (self.run.stage_index + (step / planned if planned else 0)) / self.stage_count
        loss = info.get("loss")
        updated = TrainingRun.objects.filter(pk=self.run.pk, lease_token=self.token, cancel_requested=False).update(
            step=step,
            planned_steps=planned,
            loss=loss if loss is not None and math.isfinite(loss) else None,
            train_seconds=info.get("seconds") or 0.0,
            eta_seconds=eta,
            progress=min(1.0, 0.9 * fraction),
            progress_message=message[:200],
            lease_until=_lease_until(),
        )
        if not updated:
            raise Stop("cancelled, or the lease was taken over")


# --- a slice -----------------------------------------------------------------------------------------------------


def run_slice(run_id: int, slice_number: int | None, send_next) -> str:
    """Run one slice of a training run; returns what it did ('trained', 'evaluated', 'stale', 'held', ...).
    `send_next(number)` sends the message of the slice that follows (the task passes its own `delay`)."""
    run = TrainingRun.objects.select_related("experiment").filter(pk=run_id).first()
    if run is None or run.is_finished:
        return "finished"
    if run.cancel_requested:
        end_cancelled(run)
        return "cancelled"
    if slice_number is None:  # the sweeper re-sends a lost message with the row's id alone
        slice_number = run.slice_number
    if slice_number < run.slice_number:
        return "stale"
    token = uuid.uuid4().hex
    began = time.monotonic()
    state = wait_for_lease(run_id, slice_number, token)
    if state != "acquired":
        return state
    run.refresh_from_db()
    if run.status == JobStatus.QUEUED:
        TrainingRun.objects.filter(pk=run.pk).update(status=JobStatus.RUNNING, started_at=timezone.now(), error="")
    try:
        if run.phase == Phase.TRAIN:  # the time spent waiting for the lease comes out of the slice
            seconds = max(30.0, settings.EXPERIMENT_SLICE_SECONDS - (time.monotonic() - began))
            next_fields = train_part(run, token, seconds)
            did = "trained"
        else:
            evaluate_run(run, token)
            return "evaluated"
    except Stop:
        run.refresh_from_db()
        if run.cancel_requested:
            end_cancelled(run)
            return "cancelled"
        return "taken over"
    except BaseException:
        release(run_id, token)
        raise
    _chain(run, token, slice_number, next_fields, send_next)
    return did


def _chain(run: TrainingRun, token: str, slice_number: int, fields: dict, send_next) -> None:
    """Send the next slice's message, then move the row to it and free the lease (in that order, so a worker that
    dies in between leaves a message that resumes the run; in eager mode the order is reversed, as the message
    runs at once, in this process)."""
    from portal.celery import app

    moved = dict(slice_number=slice_number + 1, slices_run=F("slices_run") + 1, **fields)
    if app.conf.task_always_eager:
        release(run.pk, token, **moved)
        send_next(slice_number + 1)
        return
    send_next(slice_number + 1)
    release(run.pk, token, **moved)


def train_part(run: TrainingRun, token: str, seconds: float) -> dict:
    """Train the current stage for one slice; the fields the row takes on after it."""
    from eqlm.trainer import train_stage

    arm = arm_of(run)
    chain = stage_chain(arm, run.seed)
    stage = chain[run.stage_index]
    folder = run_folder(run)
    previous = folder / chain[run.stage_index - 1].name / "latest.pt" if run.stage_index else None
    # The first slice picks them; the later ones keep them (a resume must train on the same threads and device).
    device = run.device or settings.EXPERIMENT_TRAIN_DEVICE
    threads = run.threads if run.device else settings.EXPERIMENT_TRAIN_THREADS
    TrainingRun.objects.filter(pk=run.pk).update(recipe_hash=stage.recipe_hash, device=device, threads=threads)
    outcome = train_stage(
        stage,
        folder / stage.name,
        init_checkpoint=previous,
        threads=threads,
        device=device,
        max_minutes=seconds / 60,
        stop_after=run.step + settings.EXPERIMENT_SLICE_STEPS if settings.EXPERIMENT_SLICE_STEPS else None,
        log=lambda line: log.info("%s: %s", run, line),
        progress=Heartbeat(run, token, len(chain)),
    )
    fields = {"step": outcome.step, "planned_steps": outcome.planned_steps}
    if not outcome.finished:
        return fields
    if run.stage_index + 1 < len(chain):
        return {"step": 0, "planned_steps": chain[run.stage_index + 1].steps, "stage_index": run.stage_index + 1}
    return {**fields, "phase": Phase.EVALUATE, "checkpoint": str(outcome.checkpoint), "eta_seconds": 0}


# --- the evaluation --------------------------------------------------------------------------------------------


def evaluation_bytes(evaluation: dict, stage) -> tuple[bytes, str]:
    """The text the evaluation reads: the committed KJV slice, or the held-out slice of the corpus trained on (the
    committed slice when the KJV corpus cannot be dumped on this machine, as the model evaluations do)."""
    if evaluation["text"] == "slice":
        return SLICE.read_bytes(), "committed held-out slice"
    from eqlm.corpus import split
    from eqlm.trainer import HELDOUT_FRACTION, load_training_corpus

    try:
        data, _, name = load_training_corpus(stage)
    except (RuntimeError, OSError) as exc:
        if stage.corpus_file is not None or stage.data["corpus"]["name"] != "kjv":
            raise
        log.warning("corpus unavailable (%s); evaluating on the committed slice", exc)
        return SLICE.read_bytes(), "committed held-out slice (the KJV corpus was unavailable)"
    return split(data, HELDOUT_FRACTION)[1], f"held-out slice of the {name}"


def evaluation_records(run: TrainingRun, evaluation: dict, figures, halting: list, provenance: dict, model) -> list:
    """Long-format records of what the evaluation measured (eqlm.path_independence's PathIndependence, or an
    explicit model's one depth in the same shape)."""
    slug, seed = run.experiment.slug, run.seed
    base = {
        "run": f"experiment:{slug}:{run.arm_label}:seed{seed}",
        "experiment": slug,
        "arm": run.arm_label,
        "seed": seed,
        "model_family": model.model_class,
        "num_params": model.num_params(),
        "model_name": f"{slug} {run.arm_label} seed {seed}",
        "config_hash": run.recipe_hash,
        "git_commit": str(provenance.get("git_commit", ""))[:64],
        "recipe": {
            "arm_hash": run.arm_hash,
            "recipe_hash": run.recipe_hash,
            "corpus_sha256": provenance.get("corpus_sha256", ""),
            "seed": seed,
        },
        "n": figures.positions,
    }
    metrics, deepest = evaluation["metrics"], figures.depths[-1]
    records = []
    for start, found in figures.starts.items():
        if "heldout_bits_per_byte" in metrics:
            for depth, value in found.bits_per_byte.items():
                condition = {"depth": depth, "start": start, "seed": seed}
                records.append(
                    {**base, "metric": "heldout_bits_per_byte", "value": value, "unit": "bits/byte"}
                    | {"condition": condition}
                )
        for metric, value, unit in (
            ("aa_cosine", found.aa_cosine, "cosine"),
            ("greedy_agreement", found.greedy_agreement, "fraction"),
        ):
            if metric in metrics and value is not None:  # against the zero start, at the deepest depth
                condition = {"depth": deepest, "start": start, "seed": seed}
                records.append({**base, "metric": metric, "value": value, "unit": unit, "condition": condition})
    for point in halting:
        condition = {"budget": point.cap, "tol": point.tol, "start": "zero", "seed": seed}
        records.append(
            {**base, "metric": "heldout_bits_per_byte", "value": point.bits_per_byte, "unit": "bits/byte"}
            | {"condition": condition, "n": point.positions}
        )
        if "mean_iterations" in metrics:
            records.append(
                {**base, "metric": "mean_iterations", "value": point.mean_iterations, "unit": "iterations"}
                | {"condition": condition, "n": point.positions}
            )
    return records


def evaluate_run(run: TrainingRun, token: str) -> None:
    """Measure the trained checkpoint as the experiment declared and write its rows (once), then end the run."""
    from benchmarks_app.models import ResultRow
    from benchmarks_app.records import ingest_records
    from eqlm.checkpoint import load_checkpoint
    from eqlm.convergence import TorchBackend, adaptive_point, windows_of
    from eqlm.explicit_bpb import explicit_bits_per_byte
    from eqlm.path_independence import PathIndependence, StartFigures, path_independence

    evaluation = run.experiment.evaluation
    model, data = load_checkpoint(run.checkpoint)
    provenance = data["provenance"]
    text, source = evaluation_bytes(evaluation, stage_chain(arm_of(run), run.seed)[-1])
    windows = windows_of(text, evaluation["window"], evaluation["windows"])
    heartbeat = Heartbeat(run, token, 1)

    def progress(fraction: float) -> None:
        heartbeat({"step": run.step, "planned_steps": run.planned_steps, "eta_seconds": None})
        TrainingRun.objects.filter(pk=run.pk).update(
            progress=0.9 + 0.1 * fraction, progress_message=f"evaluating on the {source}: {fraction:.0%}"
        )

    heartbeat({"step": run.step, "planned_steps": run.planned_steps, "eta_seconds": None})
    if model.model_class == "ExplicitLM":  # one depth, its layer count; no start, no halting
        value, positions = explicit_bits_per_byte(model, windows)
        depth = len(model.layers)
        figures = PathIndependence([depth], positions, {"zero": StartFigures("zero", {depth: value})})
        halting = []
    else:  # the measurement bench/depth_curve.py makes, on CPU (it draws its noise from a CPU generator)
        figures = path_independence(
            model.cpu(), windows, evaluation["depths"], evaluation["starts"], seed=evaluation["noise_seed"]
        )
        progress(0.8)
        halting = [
            adaptive_point(TorchBackend(model, "cpu"), windows, evaluation["tol"], cap=budget)
            for budget in evaluation["budgets"]
        ]
    records = evaluation_records(run, evaluation, figures, halting, provenance, model)
    if records:
        ingest_records(records, source_name=f"experiment:{run.experiment.slug}:{run.arm_label}:seed{run.seed}")
    written = ResultRow.objects.filter(experiment=run.experiment.slug, arm_label=run.arm_label, seed=run.seed).count()
    kept = {
        k: provenance.get(k)
        for k in (
            "run_hash",
            "config_hash",
            "git_commit",
            "corpus",
            "corpus_sha256",
            "steps",
            "tokens",
            "train_seconds",
        )
    }
    release(
        run.pk,
        token,
        status=JobStatus.DONE,
        phase=Phase.FINISHED,
        progress=1.0,
        finished_at=timezone.now(),
        progress_message=f"done: {written} result rows",
        rows_written=written,
        eta_seconds=0,
        provenance={**kept, "recipe_hash": run.recipe_hash, "evaluated_on": source},
    )
