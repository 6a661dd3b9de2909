"""Celery tasks for lab_app: thin wrappers that take a LabRun id and call the service."""

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded

from .services import job_time_limit, run_job


@shared_task(name="lab_app.tasks.run_lab_job", soft_time_limit=job_time_limit() + 5, time_limit=job_time_limit() + 30)
def run_lab_job(run_id: int) -> str:
    from .models import LabRun

    try:
        run = run_job(run_id)
    except SoftTimeLimitExceeded:
        run = LabRun.objects.filter(pk=run_id).first()
        if run is not None:
            run.mark_failed(f"The job exceeded its time limit of {job_time_limit():g} s and was stopped.")
        return "failed"
    return run.status if run else "missing"
