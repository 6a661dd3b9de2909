"""A real Celery worker (not eager) ingests an upload queued by the API."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from results.models import ResultRow, SourceFile

from .factories import harness_b_bytes


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_ingests_an_uploaded_file(live_celery, staff_client, wait_for_job):
    response = staff_client.post(
        "/api/benchmarks/uploads/",
        {"file": [SimpleUploadedFile("seed43.json", harness_b_bytes(43, 0.65))], "path": ["scale/exp32/seed43.json"]},
    )
    assert response.status_code == 202
    upload_id = response.json()["uploads"][0]["id"]
    wait_for_job(SourceFile.objects.get(pk=upload_id), timeout=30)
    status = staff_client.get(f"/api/benchmarks/uploads/{upload_id}/").json()
    assert status["status"] == "done", status
    assert SourceFile.objects.get(pk=upload_id).started_at is not None
    assert ResultRow.objects.get(metric="blimp_accuracy").value == 0.65
