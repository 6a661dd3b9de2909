"""Celery tasks for lab_app: thin wrappers that take a LabRun id and call the service.

PortalTask ends the row failed when the task raises, its soft time limit included.
"""

from celery import shared_task

from .services import job_time_limit, run_job


@shared_task(name="lab_app.tasks.run_lab_job", soft_time_limit=job_time_limit() + 5, time_limit=job_time_limit() + 30)
def run_lab_job(run_id: int) -> str:
    run = run_job(run_id)
    return run.status if run else "missing"
