"""Celery tasks of the inference app (routed to the gpu queue): they take ids and call services."""

from celery import shared_task

# Evaluations are staff-only, so a failed row shows the exception's text (PortalTask.show_error_text).
OPTIONS = {"soft_time_limit": 3600, "time_limit": 3660, "acks_late": True, "show_error_text": True}


def _evaluate(run_id: int) -> dict:
    """Run an EvaluationRun by its kind. A failure (or the time limit) ends the row failed in PortalTask."""
    from .convergence import run_convergence_evaluation
    from .models import EvaluationRun
    from .programme_eval import is_protocol_run, run_protocol_evaluation
    from .services import run_evaluation

    kind, options = EvaluationRun.objects.filter(pk=run_id).values_list("kind", "options").first() or (None, {})
    service = run_convergence_evaluation if kind == EvaluationRun.Kind.CONVERGENCE else run_evaluation
    if is_protocol_run(kind, options):
        service = run_protocol_evaluation
    run = service(run_id)
    return {"run": run.pk, "kind": run.kind, "status": run.status, "rows_written": run.rows_written}


@shared_task(name="inference.tasks.evaluate", **OPTIONS)
def evaluate(run_id: int) -> dict:
    """Any evaluation of a registered model (CUDA when available, else CPU): BLiMP by depth, or quality and
    convergence by depth (the row's kind says which)."""
    return _evaluate(run_id)


# Kept on purpose, though nothing sends it any more: `evaluate` was called `evaluate_blimp` before convergence
# evaluations joined it, and a broker may still hold messages under the old name (Redis keeps a message until a
# worker acks it, and the lost-job sweeper re-sends rows by the name in portal.celery.JOB_ROWS). Without this
# alias a worker would reject them as unregistered and their rows would stay `queued` until the sweeper fails
# them. Remove it (here and in JOB_ROWS) once no queue or row can carry the old name.
@shared_task(name="inference.tasks.evaluate_blimp", **OPTIONS)
def evaluate_blimp(run_id: int) -> dict:
    """The same as `evaluate`, under the name messages queued before it carry."""
    return _evaluate(run_id)


@shared_task(name="inference.tasks.export_model", soft_time_limit=600, time_limit=660, acks_late=True)
def export_model(model_pk: int) -> dict:
    """Export a registered checkpoint to ONNX so it is served by its slug (idempotent)."""
    from .exports import export_registered_model

    row = export_registered_model(model_pk)
    return {"model": row.slug, "onnx_dir": row.onnx_dir}


@shared_task(name="inference.tasks.import_model", **OPTIONS)
def import_model(job_id: int) -> dict:
    """The worker's half of registering a checkpoint: ONNX export, facts.json, serving (progress on the row)."""
    from .imports import run_import

    job = run_import(job_id)
    return {"import": job.pk, "model": job.model.slug, "status": job.status}
