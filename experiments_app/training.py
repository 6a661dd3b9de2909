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
import time
import uuid

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from portal.models import JobStatus

from .evaluation import evaluate_run
from .models import TrainingRun
from .runs import Heartbeat, Stop, arm_of, end_cancelled, release, run_folder, stage_chain, wait_for_lease

log = logging.getLogger(__name__)
Phase = TrainingRun.Phase


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
    try:  # the time spent waiting for the lease comes out of the slice
        seconds = settings.EXPERIMENT_SLICE_SECONDS - (time.monotonic() - began)
        if run.phase == Phase.TRAIN:
            next_fields = train_part(run, token, max(30.0, seconds))
            did = "trained"
        elif evaluate_run(run, token, seconds):  # one part of it at least, whatever the time left
            return "evaluated"
        else:  # parts of the evaluation are left: the next slice resumes from the saved ones
            next_fields, did = {}, "evaluating"
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
