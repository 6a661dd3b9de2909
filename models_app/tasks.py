"""Celery tasks of the model registry (routed to the gpu queue): they take ids and call services.

Each task is also registered under the name it had when the registry lived in the inference app
(`inference.tasks.*`): a broker may still hold messages sent under those names (Redis keeps a message until a
worker acks it), and without these aliases a worker would reject them as unregistered and their rows would stay
`queued` until the sweeper fails them. Remove the aliases (here and in portal.celery.JOB_ROWS) once no queue or row
can carry the old names.
"""

from celery import shared_task

# Evaluations are staff-only, so a failed row shows the exception's text (PortalTask.show_error_text).
OPTIONS = {"soft_time_limit": 3600, "time_limit": 3660, "acks_late": True, "show_error_text": True}
EXPORT_OPTIONS = {"soft_time_limit": 600, "time_limit": 660, "acks_late": True}


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


def _export(model_pk: int) -> dict:
    from .exports import export_registered_model

    row = export_registered_model(model_pk)
    return {"model": row.slug, "onnx_dir": row.onnx_dir}


def _import(job_id: int) -> dict:
    from .imports import run_import

    job = run_import(job_id)
    return {"import": job.pk, "model": job.model.slug, "status": job.status}


@shared_task(name="models_app.tasks.evaluate", **OPTIONS)
def evaluate(run_id: int) -> dict:
    """Any evaluation of a registered model (CUDA when available, else CPU): BLiMP by depth, or quality and
    convergence by depth (the row's kind says which)."""
    return _evaluate(run_id)


@shared_task(name="models_app.tasks.export_model", **EXPORT_OPTIONS)
def export_model(model_pk: int) -> dict:
    """Export a registered checkpoint to ONNX so it is served by its slug (idempotent)."""
    return _export(model_pk)


@shared_task(name="models_app.tasks.import_model", **OPTIONS)
def import_model(job_id: int) -> dict:
    """The worker's half of registering a checkpoint: ONNX export, facts.json, serving (progress on the row)."""
    return _import(job_id)


# --- the names messages queued before the move carry ----------------------------------------------------------------


@shared_task(name="inference.tasks.evaluate", **OPTIONS)
def evaluate_under_old_name(run_id: int) -> dict:
    """The same as `evaluate`, under the name it had in the inference app."""
    return _evaluate(run_id)


# `evaluate` was called `evaluate_blimp` before convergence evaluations joined it.
@shared_task(name="inference.tasks.evaluate_blimp", **OPTIONS)
def evaluate_blimp(run_id: int) -> dict:
    """The same as `evaluate`, under the name messages queued before it carry."""
    return _evaluate(run_id)


@shared_task(name="inference.tasks.export_model", **EXPORT_OPTIONS)
def export_model_under_old_name(model_pk: int) -> dict:
    """The same as `export_model`, under the name it had in the inference app."""
    return _export(model_pk)


@shared_task(name="inference.tasks.import_model", **OPTIONS)
def import_model_under_old_name(job_id: int) -> dict:
    """The same as `import_model`, under the name it had in the inference app."""
    return _import(job_id)
