"""Celery tasks of the experiments (routed to the `train` queue, its own niced one-thread worker)."""

from celery import shared_task

from .checks import SOFT_LIMIT

# Within Celery's defaults (600/660 s): a slice waits for its lease and trains for at most EXPERIMENT_SLICE_SECONDS
# (420) in all, leaving the rest for loading the corpus and a finished stage's closing evaluation and save.
# Staff-only, so a failed row shows the exception's text.
OPTIONS = {"soft_time_limit": SOFT_LIMIT, "time_limit": 660, "acks_late": True, "show_error_text": True}


@shared_task(name="experiments_app.tasks.train_slice", **OPTIONS)
def train_slice(run_id: int, slice_number: int | None = None) -> dict:
    """One slice of an experiment's training run (or its evaluation); sends the next slice itself."""
    from .training import run_slice

    did = run_slice(run_id, slice_number, send_next=lambda number: train_slice.delay(run_id, number))
    return {"run": run_id, "slice": slice_number, "did": did}
