"""The registry's tasks moved from inference to models_app: messages queued under their old names still run."""

import pytest

from portal.celery import JOB_ROWS, app

OLD_NAMES = {
    "inference.tasks.evaluate": "models_app.tasks.evaluate",
    "inference.tasks.evaluate_blimp": "models_app.tasks.evaluate",
    "inference.tasks.export_model": "models_app.tasks.export_model",
    "inference.tasks.import_model": "models_app.tasks.import_model",
}


@pytest.mark.parametrize("old, new", OLD_NAMES.items())
def test_a_task_is_registered_under_its_old_name_on_the_same_queue_with_the_same_limits(old, new):
    app.loader.import_default_modules()
    moved, current = app.tasks[old], app.tasks[new]
    assert (moved.soft_time_limit, moved.time_limit) == (current.soft_time_limit, current.time_limit)
    assert app.amqp.router.route({}, old)["queue"].name == app.amqp.router.route({}, new)["queue"].name == "gpu"
    assert JOB_ROWS.get(old) == JOB_ROWS.get(new)


@pytest.mark.django_db
def test_an_evaluation_queued_under_the_old_name_runs_its_row(monkeypatch):
    from models_app import tasks
    from models_app.models import EvaluationRun, RegisteredModel

    model = RegisteredModel.objects.create(slug="m", name="m", model_class="EqLM", sha256="ab" * 32)
    run = EvaluationRun.objects.create(model=model, depths=[1])
    ran = []
    monkeypatch.setattr("models_app.services.run_evaluation", lambda pk: ran.append(pk) or run)
    assert tasks.evaluate_under_old_name.apply(args=[run.pk]).get()["run"] == run.pk
    assert ran == [run.pk]
