"""The health probe reports every dependency and never answers with a 500."""

import pytest
from django.db import connection

from portal.celery import override_conf

pytestmark = pytest.mark.django_db


def test_health_reports_database_ok_and_eager_broker_by_default(client):
    response = client.get("/api/health")
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"status", "version", "commit", "database", "broker", "workers", "models"}
    assert body["database"] == "ok"
    assert body["broker"] == "eager"
    assert body["workers"] == 0
    assert body["status"] == "ok"


def test_health_reports_a_stopped_broker_as_down_with_http_200(client, settings):
    # Nothing listens on port 1: the same answer Redis gives when it is stopped.
    saved = override_conf(task_always_eager=False, broker_url="redis://127.0.0.1:1/0")
    try:
        response = client.get("/api/health")
    finally:
        override_conf(**saved)
    assert response.status_code == 200
    body = response.json()
    assert body["broker"].startswith("down")
    assert body["workers"] == 0
    assert body["status"] == "degraded"


def test_health_reports_a_lost_database_instead_of_raising(client, monkeypatch):
    from django.db import OperationalError

    def broken_cursor(*args, **kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr(connection, "cursor", broken_cursor)
    response = client.get("/api/health")
    assert response.status_code == 200
    assert response.json()["database"].startswith("down")


def test_a_page_answers_503_in_plain_words_when_the_database_is_down(client, monkeypatch):
    from django.db import OperationalError
    from django.db.models.query import QuerySet

    def broken(*args, **kwargs):
        raise OperationalError("could not connect to server")

    monkeypatch.setattr(QuerySet, "exists", broken)
    monkeypatch.setattr(QuerySet, "__iter__", broken)
    monkeypatch.setattr(QuerySet, "count", broken)
    from django.test import RequestFactory

    from portal.middleware import DatabaseUnavailableMiddleware

    middleware = DatabaseUnavailableMiddleware(lambda request: None)
    page = middleware.process_exception(RequestFactory().get("/findings/"), OperationalError("down"))
    assert page.status_code == 503
    assert page["Retry-After"]
    assert b"database is unavailable" in page.content
    api = middleware.process_exception(RequestFactory().get("/api/findings/"), OperationalError("down"))
    assert api.status_code == 503
    assert api["Content-Type"] == "application/json"
    assert middleware.process_exception(RequestFactory().get("/"), ValueError("not ours")) is None


def test_health_lists_every_servable_model_with_its_state_in_this_process(
    client, serve_models, tmp_path, tiny_onnx_export
):
    import shutil

    from models_app import serving

    shutil.copytree(tiny_onnx_export(0), tmp_path / "eqlm-demo" / "onnx")
    shutil.copytree(tiny_onnx_export(1), tmp_path / "tiny-other" / "onnx")
    (tmp_path / "broken" / "onnx").mkdir(parents=True)
    (tmp_path / "broken" / "onnx" / "manifest.json").write_text('{"graphs": {"embed": "embed.onnx"}}')
    serve_models(tmp_path)
    serving.resolve("tiny-other").runtime()
    models = {m["id"]: m for m in client.get("/api/health").json()["models"]}
    assert list(models) == ["eqlm-demo", "broken", "tiny-other"] and models["eqlm-demo"]["default"] is True
    assert models["eqlm-demo"]["state"] == "not loaded" and models["tiny-other"]["state"] == "loaded"
    assert models["broken"]["state"] == "failed" and "missing" in models["broken"]["error"]
