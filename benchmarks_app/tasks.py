"""Celery tasks for benchmarks: thin wrappers that take ids and call the ingest service."""

from celery import shared_task

from . import uploads


@shared_task(name="benchmarks_app.tasks.ingest_upload", acks_late=True)
def ingest_upload(source_id: int) -> dict:
    """Ingest one stored upload; running it twice is safe (a finished upload is left alone)."""
    source = uploads.ingest_source_file(source_id)
    return {"id": source.pk, "status": source.status, "rows_created": source.rows_created}
