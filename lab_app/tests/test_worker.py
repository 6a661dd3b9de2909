"""A lab job runs on a real Celery worker process through Redis and reports done with its results."""

import json

import pytest

from lab_app.models import LabRun

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_a_lab_sweep_job_runs_on_a_real_worker_and_reports_done_with_results(live_celery, client, wait_for_job):
    body = {
        "game": "biased_rps",
        "solver": "mmd",
        "params": {"steps": 3000, "eta": 0.05},
        "sweep": {"tau": [0.1, 0.3, 1.0]},
    }
    response = client.post("/api/lab/jobs/", data=json.dumps(body), content_type="application/json")
    assert response.status_code == 201
    assert response.json()["status"] == "queued"  # not eager: the worker picks it up
    run = wait_for_job(LabRun.objects.get(pk=response.json()["id"]))
    assert run.status == "done", run.error
    assert run.progress == 1.0 and run.started_at and run.finished_at
    detail = client.get(f"/api/lab/jobs/{run.pk}/").json()
    runs = detail["result"]["runs"]
    assert [r["point"]["tau"] for r in runs] == [0.1, 0.3, 1.0]
    assert all(r["iterations"] == 3000 and len(r["trace"]["iteration"]) > 10 for r in runs)
    # The worker's numbers are the module's numbers: the same run computed here agrees exactly.
    from lab_app.solvers import solve

    here = solve(
        {"game": "biased_rps", "solver": "mmd", "params": {"steps": 3000, "eta": 0.05, "tau": 0.3, "record": 100}}
    )
    assert runs[1]["last"]["x"] == pytest.approx(here["last"]["x"], abs=1e-12)
