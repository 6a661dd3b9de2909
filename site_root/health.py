"""Dependency probes for /api/health: each answers a short string and never raises."""

from django.db import connection

from portal.celery import app as celery_app


def database_status() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        return "ok"
    except Exception as exc:  # noqa: BLE001 - a health probe reports every failure
        return f"down: {type(exc).__name__}"


def broker_status() -> str:
    if celery_app.conf.task_always_eager:
        return "eager"
    try:
        import redis

        client = redis.Redis.from_url(celery_app.conf.broker_url, socket_timeout=1, socket_connect_timeout=1)
        client.ping()
        return "ok"
    except Exception as exc:  # noqa: BLE001
        return f"down: {type(exc).__name__}"


def live_workers(broker: str) -> int:
    if broker != "ok":
        return 0
    try:
        replies = celery_app.control.ping(timeout=0.5) or []
        return len(replies)
    except Exception:  # noqa: BLE001
        return 0


def model_states() -> list[dict]:
    """Every servable model and whether this process has it loaded (never loads one, never raises)."""
    try:
        from models_app.serving import model_states as states

        return states()
    except Exception as exc:  # noqa: BLE001
        return [{"id": "?", "state": "failed", "error": f"the model list could not be read: {type(exc).__name__}"}]
