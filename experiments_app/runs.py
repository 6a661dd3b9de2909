"""A training run's lease, heartbeat and folders: what its slices (training.py) and its evaluation (evaluation.py)
share. How the lease works is told in training.py."""

from __future__ import annotations

import logging
import math
import time
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from portal.models import JobStatus

from .models import CANCELLED, TrainingRun

log = logging.getLogger(__name__)
Phase = TrainingRun.Phase
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
