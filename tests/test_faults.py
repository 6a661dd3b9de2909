"""Faults: the database goes away, the media disk fills up or turns read-only, a worker is killed, Redis restarts.

Pages answer in plain words, the API in its error shape, nothing is half-written, and queued work is not lost
(a Redis that kept nothing on disk loses the messages; the worker's sweeper sends them again).
"""

import os
import subprocess
import uuid
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from results.models import SourceFile

from . import faults
from .report import record

ROOT = Path(__file__).resolve().parent.parent


# --- the database is unavailable ---------------------------------------------------------------------------


@pytest.fixture
def database_down(transactional_db):
    """Point the connection at a database that cannot be reached (a missing folder, or a closed port)."""
    saved = dict(connection.settings_dict)
    connection.close()
    if connection.vendor == "sqlite":
        connection.settings_dict["NAME"] = f"/nonexistent-{uuid.uuid4().hex}/portal.sqlite3"
    else:
        connection.settings_dict["HOST"], connection.settings_dict["PORT"] = "127.0.0.1", str(faults.free_port())
    yield
    connection.close()
    connection.settings_dict.clear()
    connection.settings_dict.update(saved)


def test_pages_answer_503_in_plain_words_when_the_database_is_unreachable(database_down):
    from django.test import Client

    client = Client(raise_request_exception=False)
    for url in ("/findings/", "/benchmarks/", "/council/", "/models/"):
        response = client.get(url)
        assert response.status_code == 503, url
        assert response["Content-Type"].startswith("text/plain") and response["Retry-After"]
        body = response.content.decode()
        assert "database is unavailable" in body and "Traceback" not in body and len(body) < 200, url


def test_api_answers_503_in_the_error_shape_and_health_reports_the_database(database_down):
    from django.test import Client

    client = Client(raise_request_exception=False)
    api = client.get("/api/findings/")
    assert api.status_code == 503
    assert api.json()["error"]["code"] == "database_unavailable"
    health = client.get("/api/health")
    assert health.status_code == 200
    body = health.json()
    assert body["database"].startswith("down") and body["status"] == "degraded"


# --- the media disk is full or read-only ------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path, settings):
    """A real 128 KiB tmpfs as MEDIA_ROOT: writes past it fail with ENOSPC, as on a full disk."""
    folder = tmp_path / "media-small"
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=128k", "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    settings.MEDIA_ROOT = folder
    yield folder
    subprocess.run(["umount", str(folder)], check=False)


def files_under(folder: Path) -> list[Path]:
    return [path for path in folder.rglob("*") if path.is_file()]


@pytest.mark.django_db
def test_an_upload_onto_a_full_disk_is_a_clear_error_and_leaves_nothing(small_disk, staff_client):
    data = faults.long_result_file(20_000, "faults_disk")  # ~1 MB, far over the 128 KiB disk
    api = staff_client.post("/api/benchmarks/uploads/", {"file": SimpleUploadedFile("big.csv", data)})
    assert api.status_code == 507
    error = api.json()["error"]
    assert error["code"] == "storage_unavailable" and "no space left" in error["message"]
    page = staff_client.post("/benchmarks/uploads/", {"file": SimpleUploadedFile("big.csv", data)})
    assert page.status_code == 507 and b"Nothing was saved" in page.content
    assert not SourceFile.objects.exists()
    assert files_under(small_disk) == []
    # The disk still takes a file that fits.
    small = faults.long_result_file(20, "faults_disk_small")
    fits = staff_client.post("/api/benchmarks/uploads/", {"file": SimpleUploadedFile("s.csv", small)})
    assert fits.status_code == 202
    assert SourceFile.objects.count() == 1 and len(files_under(small_disk)) == 1


@pytest.mark.django_db
def test_an_upload_into_a_read_only_media_folder_is_a_clear_error_and_leaves_nothing(small_disk, staff_client):
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    data = faults.long_result_file(10, "faults_ro")
    response = staff_client.post("/api/benchmarks/uploads/", {"file": SimpleUploadedFile("a.csv", data)})
    assert response.status_code == 503
    assert "not writable" in response.json()["error"]["message"]
    assert not SourceFile.objects.exists()


# --- workers and Redis ------------------------------------------------------------------------------------


@pytest.fixture
def fault_broker(redis_url):
    """A Redis database of these tests' own: the suite's long-lived worker (if one was started earlier in the
    session) listens on `redis_url` and would otherwise take the task away from the worker these tests kill."""
    import redis

    base, number = redis_url.rsplit("/", 1)
    url = f"{base}/{(int(number) + 1) % 16}"
    redis.Redis.from_url(url).flushdb()
    yield url
    redis.Redis.from_url(url).flushdb()


@pytest.fixture
def worker_env(fault_broker, transactional_db):
    import conftest

    return conftest.worker_environment(fault_broker)


@pytest.mark.worker
@pytest.mark.slow
def test_a_worker_killed_in_the_middle_of_an_ingest_leaves_no_rows_and_the_redelivered_task_completes_once(
    worker_env, fault_broker, tmp_path
):
    rows = int(os.environ.get("FAULT_INGEST_ROWS", "60000"))
    result = faults.kill_worker_during_ingest(worker_env, fault_broker, tmp_path / "worker.log", rows=rows)
    record(f"fault-{result.name}", vars(result))
    assert result.passed, result.line()


@pytest.mark.worker
@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("RELIABILITY_FULL") != "1", reason="loads torch in two workers (~45 s): runs in make reliability"
)
def test_a_worker_killed_in_the_middle_of_an_evaluation_is_redelivered_and_the_run_ends_done_once(
    worker_env, fault_broker, tmp_path, settings
):
    result = faults.kill_worker_during_evaluation(
        worker_env, fault_broker, tmp_path / "worker.log", Path(settings.MEDIA_ROOT), tmp_path
    )
    record(f"fault-{result.name}", vars(result))
    assert result.passed, result.line()


@pytest.mark.worker
@pytest.mark.slow
def test_jobs_queued_before_a_redis_restart_run_after_it_returns(worker_env, tmp_path):
    result = faults.redis_restart_with_queued_jobs(worker_env, tmp_path, tmp_path / "worker.log", jobs=4)
    record(f"fault-{result.name}", vars(result))
    assert result.passed, result.line()


@pytest.mark.worker
@pytest.mark.slow
def test_jobs_lost_by_a_redis_restart_without_persistence_are_resent_by_the_sweeper_and_end_done(worker_env, tmp_path):
    result = faults.redis_restart_without_persistence(worker_env, tmp_path, tmp_path / "worker.log", jobs=4)
    record(f"fault-{result.name}", vars(result))
    assert result.passed, result.line()


@pytest.mark.django_db(transaction=True)
def test_a_job_submitted_while_redis_is_down_ends_failed_with_a_clear_message(client):
    from lab_app.models import LabRun

    closed = f"redis://127.0.0.1:{faults.free_port()}/0"  # nothing listens there: Redis is down
    with faults.celery_on(closed):
        response = client.post(
            "/api/lab/jobs/",
            {"game": "biased_rps", "solver": "mmd", "params": {"steps": 50}},
            content_type="application/json",
        )
    assert response.status_code == 503 and response["Retry-After"]
    error = response.json()["error"]
    assert error["code"] == "queue_unavailable" and "submit it again" in error["message"]
    run = LabRun.objects.get()
    assert run.status == "failed" and "job queue (Redis) was unavailable" in run.error
