"""The lab's pages render for everyone, carry no inline script, and the job page shows status and results."""

import pytest
from django.conf import settings

from lab_app.models import LabRun
from lab_app.services import create_job

pytestmark = pytest.mark.django_db


def test_lab_page_renders_with_presets_solvers_and_scripts(client):
    response = client.get("/lab/")
    assert response.status_code == 200
    html = response.content.decode()
    for text in ('id="game-preset"', "biased_rps", 'value="qre_path"', "vendor/plotly.min.js"):
        assert text in html
    # The page's script is an ES module that imports the solvers (static/js/lab/solvers.js and solvers/*.js).
    assert '<script type="module" src="/static/js/lab/lab.js">' in html
    assert 'from "./solvers.js"' in (settings.BASE_DIR / "static/js/lab/lab.js").read_text()
    assert "onclick=" not in html
    assert 'aria-current="page"' in html
    assert response.cookies.get("csrftoken"), "the page sets the CSRF cookie its POSTs need"


def test_every_import_between_the_lab_modules_names_a_file_that_exists():
    import re

    root = settings.BASE_DIR / "static/js/lab"
    modules = [root / "lab.js", root / "job.js", root / "render.js", root / "solvers.js", *root.glob("solvers/*.js")]
    assert len(modules) >= 9
    found = 0
    for module in modules:
        for target in re.findall(r'^import .* from "(\./[^"]+)";$', module.read_text(), re.M):
            assert (module.parent / target).resolve().is_file(), f"{module.name} imports {target}"
            found += 1
    assert found >= 10


def test_job_page_shows_progress_then_results(client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        run = create_job({"game": "rps", "solver": "nash"})
    run.refresh_from_db()
    response = client.get(f"/lab/jobs/{run.pk}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "<progress" in html and "job-data" in html and "Done" in html


def test_failed_job_page_shows_the_error(client):
    run = LabRun.objects.create(solver="mmd", game_name="rps", spec={"game": "rps", "solver": "mmd"})
    run.mark_failed("The job exceeded its time limit of 1 s.")
    html = client.get(f"/lab/jobs/{run.pk}/").content.decode()
    assert "exceeded its time limit" in html


def test_unknown_job_page_is_404(client):
    assert client.get("/lab/jobs/424242/").status_code == 404


def test_running_a_finished_job_again_changes_nothing(django_capture_on_commit_callbacks):
    from lab_app.services import run_job

    with django_capture_on_commit_callbacks(execute=True):
        run = create_job({"game": "rps", "solver": "nash"})
    run.refresh_from_db()
    finished = run.finished_at
    run_job(run.pk)
    run.refresh_from_db()
    assert run.finished_at == finished and run.status == "done"


def test_staff_see_lab_runs_in_the_admin_and_can_queue_them_again(staff_client, django_capture_on_commit_callbacks):
    run = LabRun.objects.create(solver="nash", game_name="rps", spec={"game": "rps", "solver": "nash"})
    run.mark_failed("worker lost")
    assert staff_client.get("/admin/lab_app/labrun/").status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(
            "/admin/lab_app/labrun/", {"action": "rerun", "_selected_action": [run.pk]}, follow=True
        )
    assert response.status_code == 200
    run.refresh_from_db()
    assert run.status == "done" and run.result["equilibria"]


def test_anonymous_visitors_cannot_open_the_admin_list(client):
    assert client.get("/admin/lab_app/labrun/").status_code == 302


def test_a_finished_job_no_longer_says_what_its_last_step_was_doing(client, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        run = create_job({"game": "rps", "solver": "qre_path", "params": {"lambda_max": 10}})
    run.refresh_from_db()
    assert run.status == "done" and run.progress == 1.0 and run.progress_message == ""
    html = client.get(f"/lab/jobs/{run.pk}/").content.decode()
    assert "solving" not in html.split('id="job-progress-text"', 1)[1].split("</span>", 1)[0]
    assert client.get(f"/api/lab/jobs/{run.pk}/").json()["progress_message"] == ""


def test_the_lab_page_names_its_api_endpoints_for_its_script(client):
    html = client.get("/lab/").content.decode()
    assert 'data-solve-endpoint="/api/lab/solve"' in html and 'data-jobs-endpoint="/api/lab/jobs/"' in html
    script = (settings.BASE_DIR / "static/js/lab/lab.js").read_text()
    assert '"/api/' not in script
