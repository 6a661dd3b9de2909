"""Celery tasks of the inference app (routed to the gpu queue): they take ids and call services."""

import logging

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded

log = logging.getLogger(__name__)


def _evaluate(run_id: int) -> dict:
    """Run an EvaluationRun by its kind; marks the row failed on error (and at the time limit)."""
    from .convergence import run_convergence_evaluation
    from .models import EvaluationRun
    from .services import run_evaluation

    kind = EvaluationRun.objects.filter(pk=run_id).values_list("kind", flat=True).first()
    service = run_convergence_evaluation if kind == EvaluationRun.Kind.CONVERGENCE else run_evaluation
    try:
        run = service(run_id)
    except SoftTimeLimitExceeded:
        EvaluationRun.objects.get(pk=run_id).mark_failed("stopped at the task's time limit")
        raise
    except Exception as exc:
        log.exception("evaluation %s (%s) failed", run_id, kind)
        row = EvaluationRun.objects.filter(pk=run_id).first()
        if row is not None:
            row.mark_failed(f"{type(exc).__name__}: {exc}"[:2000])
        raise
    return {"run": run.pk, "kind": run.kind, "status": run.status, "rows_written": run.rows_written}


@shared_task(name="inference.tasks.evaluate", soft_time_limit=3600, time_limit=3660, acks_late=True)
def evaluate(run_id: int) -> dict:
    """Any evaluation of a registered model (CUDA when available, else CPU): BLiMP by depth, or quality and
    convergence by depth (the row's kind says which)."""
    return _evaluate(run_id)


@shared_task(name="inference.tasks.evaluate_blimp", soft_time_limit=3600, time_limit=3660, acks_late=True)
def evaluate_blimp(run_id: int) -> dict:
    """The same as `evaluate`, under the name messages queued before it carry."""
    return _evaluate(run_id)
