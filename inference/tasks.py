"""Celery tasks of the inference app (routed to the gpu queue): they take ids and call services."""

import logging

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded

log = logging.getLogger(__name__)


@shared_task(name="inference.tasks.evaluate_blimp", soft_time_limit=1800, time_limit=1860, acks_late=True)
def evaluate_blimp(run_id: int) -> dict:
    """BLiMP evaluation of a registered model (CUDA when available, else CPU); marks the row failed on error."""
    from .models import EvaluationRun
    from .services import run_evaluation

    try:
        run = run_evaluation(run_id)
    except SoftTimeLimitExceeded:
        EvaluationRun.objects.get(pk=run_id).mark_failed("stopped at the task's time limit")
        raise
    except Exception as exc:
        log.exception("BLiMP evaluation %s failed", run_id)
        row = EvaluationRun.objects.filter(pk=run_id).first()
        if row is not None:
            row.mark_failed(f"{type(exc).__name__}: {exc}"[:2000])
        raise
    return {"run": run.pk, "status": run.status, "rows_written": run.rows_written}
