"""The sweeper re-sends jobs whose message Redis lost, fails them past a limit, and leaves every other row alone."""

from datetime import timedelta

import pytest
import redis
from django.core.management import call_command
from django.utils import timezone

from lab_app.models import LabRun
from lab_app.services import create_job, validate_job_spec
from portal.celery import app
from portal.jobs import MAX_REQUEUES, requeue_lost_jobs

SPEC = {"game": "biased_rps", "solver": "mmd", "params": {"steps": 50}}


def lab_row(age_s: float, **fields) -> LabRun:
    """A lab job row created `age_s` seconds ago whose message was never sent (as if Redis had lost it)."""
    spec, _ = validate_job_spec(SPEC)
    run = LabRun.objects.create(solver="mmd", game_name="biased_rps", spec=spec, **fields)
    LabRun.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(seconds=age_s))
    return run


@pytest.fixture
def idle_broker(redis_url, use_broker):
    """A Redis database no worker listens on, so a message sent there stays in its queue."""
    base, number = redis_url.rsplit("/", 1)
    url = f"{base}/{(int(number) + 2) % 16}"
    client = redis.Redis.from_url(url)
    client.flushdb()
    use_broker(url)
    yield client
    client.flushdb()


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_job_lost_long_ago_is_resent_and_runs_and_one_resent_too_often_ends_failed(live_celery, wait_for_job):
    lost = lab_row(3600)
    exhausted = lab_row(3600, requeue_count=MAX_REQUEUES)
    fresh = lab_row(0)
    running = lab_row(3600, status="running")
    done = lab_row(3600, status="done", progress=1.0)

    sweep = requeue_lost_jobs(older_than_s=300)

    assert sweep.resent == [f"lab_app.LabRun#{lost.pk}"]
    assert sweep.failed == [f"lab_app.LabRun#{exhausted.pk}"]
    lost = wait_for_job(lost, timeout=30)
    assert lost.status == "done" and lost.requeue_count == 1 and lost.result, lost.error
    exhausted.refresh_from_db()
    assert exhausted.status == "failed" and exhausted.finished_at
    assert "lost this job" in exhausted.error and "resubmit it" in exhausted.error
    fresh.refresh_from_db()
    assert (fresh.status, fresh.requeue_count, fresh.requeued_at) == ("queued", 0, None)
    for row, status in ((running, "running"), (done, "done")):
        row.refresh_from_db()
        assert (row.status, row.requeue_count, row.error) == (status, 0, "")


@pytest.mark.django_db(transaction=True)
def test_a_job_whose_message_is_still_in_redis_waits_and_is_resent_only_once_redis_loses_it(idle_broker):
    run = create_job(SPEC)
    LabRun.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(hours=1))
    assert idle_broker.llen("default") == 1

    backlog = requeue_lost_jobs(older_than_s=300)
    assert (backlog.resent, backlog.waiting) == ([], 1)
    assert idle_broker.llen("default") == 1

    idle_broker.flushdb()  # what a restart of a Redis without persistence does
    lost = requeue_lost_jobs(older_than_s=300)
    assert lost.resent == [f"lab_app.LabRun#{run.pk}"]
    assert idle_broker.llen("default") == 1
    run.refresh_from_db()
    assert run.status == "queued" and run.requeue_count == 1 and run.requeued_at

    # The re-send restarts the clock: the next sweep leaves the row to its new message.
    again = requeue_lost_jobs(older_than_s=300)
    assert (again.resent, again.waiting) == ([], 0)
    assert idle_broker.llen("default") == 1


@pytest.mark.django_db
def test_the_management_command_resends_lost_jobs_older_than_the_threshold(capsys):
    old, recent = lab_row(600), lab_row(30)  # eager mode (no broker): a re-sent job runs in this process
    call_command("requeue_lost_jobs", "--older-than", "60")
    old.refresh_from_db()
    recent.refresh_from_db()
    assert old.status == "done" and old.requeue_count == 1
    assert recent.status == "queued" and recent.requeue_count == 0
    assert "1 re-sent, 0 failed" in capsys.readouterr().out


def test_the_worker_beat_sweeps_every_job_sweep_seconds(settings):
    entry = app.conf.beat_schedule["sweep-lost-jobs"]
    assert entry["task"] == "portal.sweep_lost_jobs"
    assert entry["schedule"] == settings.JOB_SWEEP_SECONDS
    app.loader.import_default_modules()  # what a worker does at start: it imports every app's tasks module
    assert "portal.sweep_lost_jobs" in app.tasks


@pytest.mark.django_db(transaction=True)
def test_a_queued_job_row_holds_the_id_of_the_message_sent_for_it(idle_broker):
    import json

    from portal.jobs import task_ids_in_broker

    run = create_job(SPEC)
    run.refresh_from_db()
    message = json.loads(idle_broker.lrange("default", 0, -1)[0])
    assert run.task_id and message["headers"]["id"] == run.task_id
    assert task_ids_in_broker() == {run.task_id}
