"""Celery really runs: a task goes through Redis to a separate worker process and back."""

import pytest

from portal.celery import app
from portal.tasks import echo

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_a_task_round_trips_through_redis_and_a_real_worker(live_celery, redis_url):
    import redis

    result = echo.delay({"hello": "worker"})
    assert result.get(timeout=30) == {"echo": {"hello": "worker"}}
    assert app.conf.task_always_eager is False
    # The message really passed through the suite's own Redis database.
    assert redis.Redis.from_url(redis_url).dbsize() >= 1


def test_health_counts_the_live_worker(live_celery, client):
    body = client.get("/api/health").json()
    assert body["broker"] == "ok"
    assert body["workers"] >= 1


def test_celery_is_configured_for_json_late_acks_and_three_queues():
    assert app.conf.task_serializer == "json"
    assert app.conf.accept_content == ["json"]
    assert app.conf.task_acks_late is True
    assert app.conf.task_reject_on_worker_lost is True
    assert app.conf.task_soft_time_limit and app.conf.task_time_limit > app.conf.task_soft_time_limit
    assert {queue.name for queue in app.conf.task_queues} == {"default", "gpu", "train"}
    assert app.conf.task_routes["experiments_app.tasks.*"] == {"queue": "train"}
