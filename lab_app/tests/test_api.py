"""The lab's JSON API: synchronous solves, job creation and status, and 400s that name the field."""

import json

import pytest

from lab_app.models import LabRun

pytestmark = pytest.mark.django_db


def post(client, url, body, **extra):
    data = body if isinstance(body, str) else json.dumps(body)
    return client.post(url, data=data, content_type="application/json", **extra)


@pytest.fixture
def post_job(client, django_capture_on_commit_callbacks):
    """POST a job and run the task it queues on commit (Celery is eager in tests)."""

    def go(body, as_client=None):
        with django_capture_on_commit_callbacks(execute=True):
            response = post(as_client or client, "/api/lab/jobs/", body)
        return response

    return go


def test_anonymous_visitor_can_solve_a_small_problem_synchronously(client):
    response = post(client, "/api/lab/solve", {"game": "biased_rps", "solver": "nash"})
    assert response.status_code == 200
    body = response.json()
    assert body["solver"] == "nash" and body["metric"] == "nashconv"
    assert body["equilibria"][0]["x_frac"] == ["3/7", "3/7", "1/7"]


def test_solve_accepts_explicit_matrices_and_returns_the_browser_shape(client):
    response = post(
        client,
        "/api/lab/solve",
        {"game": {"A": [[9, 0], [0, 1]], "B": [[0, 1], [1, 0]]}, "solver": "qre", "params": {"lambda": 3}},
    )
    body = response.json()
    assert response.status_code == 200
    assert set(body) >= {"solver", "game", "params", "metric", "x", "y", "residual", "converged", "lambda"}
    assert body["residual"] <= 1e-10


@pytest.mark.parametrize(
    "body,param",
    [
        ('{"game": {"A": [[1, NaN], [0, 1]]}, "solver": "nash"}', "game.A"),
        ({"game": {"A": [[1, 2], [3]]}, "solver": "nash"}, "game.A"),
        ({"game": {"A": [[0] * 51] * 2}, "solver": "nash"}, "game.A"),
        ({"game": {"A": [[1, 2]], "B": [[1, 2, 3]]}, "solver": "nash"}, "game.B"),
        ({"game": "rps", "solver": "qre", "params": {"lambda": -0.5}}, "params.lambda"),
        ({"game": "rps", "solver": "mmd", "params": {"steps": 20001}}, "params.steps"),
        ({"game": "rps", "solver": "simulated_annealing"}, "solver"),
        ({"game": {"A": [[1, "x"]]}, "solver": "nash"}, "game.A"),
        ({"game": "rps", "solver": "qre", "params": {"lamda": 3}}, "params.lamda"),
        ({"game": "rps", "solver": "nash", "params": {"eta": 0.1}}, "params.eta"),
        ({"game": {"preset": "random", "zero_sum": [1]}, "solver": "nash"}, "game.zero_sum"),
        ({"game": {"preset": "random", "size": 4}, "solver": "nash"}, "game.size"),
        ({"game": {"preset": "rps", "m": 4}, "solver": "nash"}, "game.m"),
        ({"game": {"A": [[1, 0], [0, 1]], "name": 5}, "solver": "nash"}, "game.name"),
        ({"game": {"A": [[1, 0], [0, 1]], "b": [[0, 1], [1, 0]]}, "solver": "nash"}, "game.b"),
    ],
)
def test_bad_solve_input_gets_400_naming_the_field(client, body, param):
    response = post(client, "/api/lab/solve", body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["param"] == param
    assert error["type"] == "invalid_request_error"
    assert param in error["message"]


def test_solve_refuses_enumeration_beyond_eight_actions_synchronously(client):
    response = post(
        client,
        "/api/lab/solve",
        {"game": {"preset": "random", "m": 9, "n": 9}, "solver": "nash", "params": {"method": "enumerate"}},
    )
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "params.method"


def test_a_synchronous_solve_past_its_time_limit_points_to_jobs(client, monkeypatch):
    from lab_app import services

    monkeypatch.setattr(services, "SYNC_TIME_LIMIT", 0.05)
    body = {"game": {"preset": "random", "m": 50, "n": 50}, "solver": "mmd", "params": {"steps": 20000}}
    response = post(client, "/api/lab/solve", body)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "too_slow_for_sync" and "/api/lab/jobs/" in error["message"]


def test_posting_a_job_creates_a_labrun_and_runs_it(client, post_job):
    response = post_job({"game": "biased_rps", "solver": "qre_path", "params": {"lambda_max": 500}})
    assert response.status_code == 201
    job = response.json()
    run = LabRun.objects.get(pk=job["id"])
    assert run.status == "done"  # eager Celery in tests
    detail = client.get(f"/api/lab/jobs/{run.pk}/").json()
    assert detail["status"] == "done" and detail["progress"] == 1.0
    assert detail["result"]["limit"]["x_frac"] == ["3/7", "3/7", "1/7"]
    assert detail["url"].endswith(f"/lab/jobs/{run.pk}/")


def test_a_sweep_job_reports_one_summary_per_parameter_combination(client, post_job):
    body = {
        "game": "biased_rps",
        "solver": "mmd",
        "params": {"steps": 2000, "eta": 0.05},
        "sweep": {"tau": [0.1, 0.5], "eta": [0.05, 0.1]},
    }
    job = post_job(body).json()
    detail = client.get(job["api_url"]).json()
    assert detail["status"] == "done"
    runs = detail["result"]["runs"]
    # Parameters vary in alphabetical order of their names (the last one fastest), whatever the database.
    assert [r["point"] for r in runs] == [
        {"eta": 0.05, "tau": 0.1},
        {"eta": 0.05, "tau": 0.5},
        {"eta": 0.1, "tau": 0.1},
        {"eta": 0.1, "tau": 0.5},
    ]
    assert all("trace" in r and "trajectory" not in r for r in runs)


def test_a_seed_sweep_varies_the_random_game(client, post_job):
    body = {"game": {"preset": "random", "m": 3, "n": 3}, "solver": "nash", "sweep": {"seed": [1, 2, 3]}}
    detail = client.get(post_job(body).json()["api_url"]).json()
    names = [r["game"]["name"] for r in detail["result"]["runs"]]
    assert names == ["random 3×3 seed 1", "random 3×3 seed 2", "random 3×3 seed 3"]


@pytest.mark.parametrize(
    "body,param",
    [
        ({"game": "rps", "solver": "mmd", "params": {"steps": 10**7}}, "params.steps"),
        ({"game": "rps", "solver": "mmd", "sweep": {"tau": [0.1] * 26}}, "sweep.tau"),
        ({"game": "rps", "solver": "mmd", "sweep": {"tau": [-1, 0.1]}}, "params.tau"),
        ({"game": "rps", "solver": "nash", "sweep": {"seed": [1, 2]}}, "sweep.seed"),
        ({"game": "rps", "solver": "dance"}, "solver"),
        ({"game": "rps", "solver": "mmd", "sweep": {"lambda": [1, 2]}}, "sweep.lambda"),
        ({"game": "rps", "solver": "qre", "params": {"steps": 10}}, "params.steps"),
    ],
)
def test_bad_job_input_gets_400_and_stores_nothing(client, body, param):
    response = post(client, "/api/lab/jobs/", body)
    assert response.status_code == 400
    assert response.json()["error"]["param"] == param
    assert LabRun.objects.count() == 0


def test_a_job_past_its_time_limit_ends_failed_with_a_clear_message(client, settings, post_job):
    settings.LAB_JOB_TIME_LIMIT = 0.2
    body = {"game": {"preset": "random", "m": 50, "n": 50}, "solver": "mmd", "params": {"steps": 200000}}
    job = post_job(body).json()
    run = LabRun.objects.get(pk=job["id"])
    assert run.status == "failed"
    assert "exceeded its time limit of 0.2 s" in run.error
    assert run.result is None
    assert client.get(job["api_url"]).json()["error"] == run.error


def test_unknown_job_is_404_in_the_api_shape(client):
    response = client.get("/api/lab/jobs/999999/")
    assert response.status_code == 404
    assert response.json()["error"]["type"] == "not_found_error"


def test_logged_in_browser_posts_need_the_csrf_token(member_user):
    from django.test import Client

    browser = Client(enforce_csrf_checks=True)
    browser.force_login(member_user)
    spec = {"game": "rps", "solver": "nash"}
    assert post(browser, "/api/lab/solve", spec).status_code == 403
    browser.get("/lab/")
    token = browser.cookies["csrftoken"].value
    assert post(browser, "/api/lab/solve", spec, HTTP_X_CSRFTOKEN=token).status_code == 200


def test_job_owner_is_recorded_for_members(member_client, member_user):
    job = post(member_client, "/api/lab/jobs/", {"game": "rps", "solver": "nash"}).json()
    assert LabRun.objects.get(pk=job["id"]).owner == member_user


ODD_BODIES = [  # wrong types where the solvers expect an object, a list, a name or a number
    {"game": "rps", "solver": "mmd", "params": True},
    {"game": "rps", "solver": "mmd", "params": False},
    {"game": "rps", "solver": "mmd", "params": [1, 2]},
    {"game": "rps", "solver": "mmd", "params": "eta=0.1"},
    {"game": "rps", "solver": "mmd", "params": 0},
    {"game": {"preset": [1]}, "solver": "nash"},
    {"game": {"preset": {"a": 1}}, "solver": "nash"},
    {"game": {"preset": True}, "solver": "nash"},
    {"game": {"preset": "random", "m": True}, "solver": "nash"},
    {"game": {"A": True}, "solver": "nash"},
    {"game": {"A": [[1, 0], [0, 1]], "B": True}, "solver": "nash"},
    {"game": [[1, 0], [0, 1]], "solver": "nash"},
    {"game": True, "solver": "nash"},
    {"game": "rps", "solver": ["mmd"]},
    {"game": "rps", "solver": {"a": 1}},
    {"game": "rps", "solver": True},
    {"game": "rps", "solver": "mmd", "params": {"x0": {"a": 1}}},
    {"game": "rps", "solver": "mmd", "params": {"y0": [True, 0, 0]}},
    {"game": "rps", "solver": "mmd", "params": {"magnet_x": True}},
    {"game": "rps", "solver": "qre_path", "params": {"max_points": [2]}},
    [{"game": "rps", "solver": "mmd"}],
    True,
    "rps",
    None,
]
ODD_SWEEPS = [  # jobs only: the sweep copies params into each run and puts each value in a run's params
    {"game": "rps", "solver": "mmd", "params": True, "sweep": {"tau": [0.1, 0.2]}},
    {"game": "rps", "solver": "mmd", "params": [["tau", 0.1]], "sweep": {"tau": [0.1]}},
    {"game": "rps", "solver": "mmd", "sweep": True},
    {"game": "rps", "solver": "mmd", "sweep": [0.1, 0.2]},
    {"game": "rps", "solver": "mmd", "sweep": {"tau": True}},
    {"game": "rps", "solver": "mmd", "sweep": {"tau": {"a": 1}}},
    {"game": "rps", "solver": "mmd", "sweep": {"tau": [True, None]}},
    {"game": "rps", "solver": "mmd", "sweep": {"tau": [[0.1], {"a": 1}]}},
    {"game": "rps", "solver": "mmd", "sweep": {"x0": [True, [1], {"a": 1}, None]}},
    {"game": "rps", "solver": "mmd", "sweep": {"magnet_x": [True, "uniform"]}},
    {"game": "rps", "solver": "mmd", "sweep": {"record": [True]}},
    {"game": "rps", "solver": "mmd", "sweep": {"alternating": [1, "yes"]}},
    {"game": {"preset": "random"}, "solver": "nash", "sweep": {"seed": [True, [1], {"a": 1}]}},
    {"game": {"preset": [1]}, "solver": "nash", "sweep": {"seed": [1, 2]}},
]
ODD_REQUESTS = [("/api/lab/solve", body) for body in ODD_BODIES] + [
    ("/api/lab/jobs/", body) for body in ODD_BODIES + ODD_SWEEPS
]


@pytest.mark.parametrize("path,body", ODD_REQUESTS, ids=[f"{p} {json.dumps(b)[:60]}" for p, b in ODD_REQUESTS])
def test_a_body_of_odd_types_is_a_400_in_the_error_shape_and_stores_nothing(client, path, body):
    response = post(client, path, json.dumps(body))
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and error["message"] and error["param"]
    assert LabRun.objects.count() == 0
