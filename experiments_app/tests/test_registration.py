"""Registering, editing and launching experiments: edits are refused once launched, launching twice is idempotent."""

import pytest
from django.test import Client

from experiments_app.models import Experiment, TrainingRun

from .factories import TINY_RECIPE, tiny_experiment, tiny_spec

pytestmark = pytest.mark.django_db


def patch(client, slug: str, body) -> object:
    return client.patch(f"/api/experiments/{slug}/", body, content_type="application/json")


def test_registration_hashes_the_frozen_text_and_each_arm():
    experiment = tiny_experiment()
    assert len(experiment.registration_hash) == 64
    base, fast = experiment.arms
    assert len(base["hash"]) == 16 and base["hash"] != fast["hash"]
    again = tiny_experiment("tiny-again")
    assert again.registration_hash == experiment.registration_hash  # the slug is an address, not the claim
    other = tiny_experiment("tiny-other", seeds=[1, 2, 3])
    assert other.registration_hash != experiment.registration_hash


def test_staff_may_edit_an_experiment_before_it_is_launched(staff_client):
    experiment = tiny_experiment()
    response = patch(staff_client, "tiny", {"seeds": [1, 2, 3], "title": "Three seeds"})
    assert response.status_code == 200, response.content
    experiment.refresh_from_db()
    assert experiment.seeds == [1, 2, 3] and experiment.title == "Three seeds"
    assert response.json()["registration_hash"] == experiment.registration_hash


def test_editing_a_started_experiment_is_refused_with_409_and_changes_nothing(
    staff_client, django_capture_on_commit_callbacks
):
    experiment = tiny_experiment()
    with django_capture_on_commit_callbacks(execute=False):
        assert staff_client.post("/api/experiments/tiny/runs/").status_code == 202
    registered = experiment.registration_hash
    for body in ({"hypothesis": "Something else."}, {"seeds": [7]}, {"criterion": {"op": "all", "of": []}}):
        response = patch(staff_client, "tiny", body)
        assert response.status_code == 409, body
        assert response.json()["error"]["code"] == "experiment_frozen"
        assert "new version" in response.json()["error"]["message"]
    experiment.refresh_from_db()
    assert experiment.registration_hash == registered and experiment.seeds == [1, 2]
    assert patch(staff_client, "tiny", {"notes": "seed 2 ran on another machine"}).status_code == 200


def test_a_started_experiment_is_read_only_in_the_admin(staff_client, django_capture_on_commit_callbacks):
    experiment = tiny_experiment()
    page = staff_client.get(f"/admin/experiments_app/experiment/{experiment.pk}/change/")
    assert b'name="hypothesis"' in page.content
    with django_capture_on_commit_callbacks(execute=False):
        staff_client.post(
            "/admin/experiments_app/experiment/",
            {"action": "launch_experiments", "_selected_action": [experiment.pk]},
        )
    assert TrainingRun.objects.filter(experiment=experiment).count() == 4
    page = staff_client.get(f"/admin/experiments_app/experiment/{experiment.pk}/change/")
    assert page.status_code == 200
    assert b'name="hypothesis"' not in page.content and b'name="seeds"' not in page.content


def test_a_new_version_links_its_predecessor():
    first = tiny_experiment()
    second = tiny_experiment("tiny-v2", predecessor="tiny", seeds=[1, 2, 3])
    assert second.predecessor == first and list(first.successors.all()) == [second]


def test_launching_twice_queues_each_arm_and_seed_once(staff_client, django_capture_on_commit_callbacks):
    tiny_experiment()
    with django_capture_on_commit_callbacks(execute=False) as first:
        response = staff_client.post("/api/experiments/tiny/runs/")
    assert response.status_code == 202 and response.json()["queued"] == 4 and len(first) == 4
    with django_capture_on_commit_callbacks(execute=False) as second:
        response = staff_client.post("/api/experiments/tiny/runs/")
    assert response.status_code == 200 and response.json()["queued"] == 0 and len(second) == 0
    runs = TrainingRun.objects.order_by("arm_label", "seed")
    assert [(r.arm_label, r.seed) for r in runs] == [("base", 1), ("base", 2), ("fast", 1), ("fast", 2)]
    assert Experiment.objects.get().is_frozen


def test_only_staff_edit_or_launch_and_an_unknown_slug_is_404(member_user):
    tiny_experiment()
    member = Client()
    member.force_login(member_user)
    for client in (Client(), member):
        assert patch(client, "tiny", {"title": "x"}).status_code in (401, 403)
        assert client.post("/api/experiments/tiny/runs/").status_code in (401, 403)
    assert not TrainingRun.objects.exists()
    assert Client().get("/api/experiments/no-such/").status_code == 404
    assert Client().get("/benchmarks/experiments/no-such/").status_code == 404


def test_unknown_slug_is_404_for_staff_too(staff_client):
    assert patch(staff_client, "no-such", {"title": "x"}).status_code == 404
    assert staff_client.post("/api/experiments/no-such/runs/").status_code == 404


@pytest.mark.parametrize(
    ("change", "param"),
    [
        ({"seeds": [1, 1]}, "seeds"),
        ({"arms": [{"label": "a", "recipe": TINY_RECIPE, "overrides": ["seed=3"]}]}, "arms[0].overrides"),
        ({"arms": [{"label": "a", "recipe": "no-such-recipe"}]}, "arms[0]"),
        ({"evaluation": {"starts": ["sideways"]}}, "evaluation.starts"),
        ({"criterion": {"op": "value", "of": {"arm": "nobody", "metric": "m"}, "cmp": "<", "value": 1}}, None),
        ({"hypothesis": "  "}, "hypothesis"),
    ],
)
def test_a_bad_registration_is_a_400_naming_the_field(staff_client, change, param):
    tiny_experiment()
    response = patch(staff_client, "tiny", change)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["param"] == (param or "criterion.of.arm")
    assert Experiment.objects.get().seeds == tiny_spec()["seeds"]


def test_cancelling_a_queued_run_ends_it_and_flags_it(staff_client, django_capture_on_commit_callbacks):
    tiny_experiment()
    with django_capture_on_commit_callbacks(execute=False):
        staff_client.post("/api/experiments/tiny/runs/")
    response = staff_client.post("/api/experiments/tiny/runs/cancel/")
    assert response.json()["cancelled"] == 4
    assert {r["status"] for r in response.json()["runs"]} == {"cancelled"}
    from experiments_app.training import run_slice

    run = TrainingRun.objects.first()
    assert run_slice(run.pk, 0, None) == "finished"  # a message that arrives afterwards does nothing
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = staff_client.post(
            "/admin/experiments_app/trainingrun/", {"action": "retry_runs", "_selected_action": [run.pk]}
        )
    assert response.status_code == 302 and len(callbacks) == 1
    run.refresh_from_db()
    assert run.status == "queued" and not run.cancel_requested and not run.error


def test_a_lease_that_outlives_redelivery_fails_the_system_check(settings):
    from experiments_app.checks import training_slices_fit_their_limits

    assert training_slices_fit_their_limits(None) == []
    settings.EXPERIMENT_LEASE_SECONDS = 4000
    settings.EXPERIMENT_SLICE_SECONDS = 600
    assert [e.id for e in training_slices_fit_their_limits(None)] == ["experiments.E001", "experiments.E002"]


@pytest.mark.parametrize(
    "body",
    [
        [],
        "text",
        {"arms": "x"},
        {"arms": [{"label": "a", "recipe": "x\u0000.toml"}]},
        {"arms": [{"label": "a", "recipe": "/etc/passwd"}]},
        {"seeds": [True]},
        {"seeds": [2**40]},
        {"evaluation": {"depths": [0]}},
        {"evaluation": {"windows": 1e9}},
        {"criterion": {"op": "all", "of": [[]]}},
        {"criterion": {"op": "value", "of": {"arm": "base", "metric": "m", "where": {"d": {"x": 1}}}}},
        {"title": {"nested": True}},
        {"slug": "renamed"},
    ],
)
def test_a_malformed_edit_is_a_4xx_in_the_error_shape(staff_client, body):
    tiny_experiment()
    response = patch(staff_client, "tiny", body)
    assert 400 <= response.status_code < 500, (body, response.content)
    assert response.json()["error"]["message"]


def test_staff_register_an_experiment_in_the_admin_with_the_apis_validation(staff_client):
    import json

    spec = tiny_spec("from-admin")
    form = {k: json.dumps(spec[k]) for k in ("arms", "seeds", "evaluation", "criterion")}
    form |= {"slug": "from-admin", "title": "From the admin", "hypothesis": spec["hypothesis"], "notes": ""}
    bad = staff_client.post("/admin/experiments_app/experiment/add/", form | {"seeds": "[1, 1]"})
    assert bad.status_code == 200 and b"each seed once" in bad.content
    response = staff_client.post("/admin/experiments_app/experiment/add/", form)
    assert response.status_code == 302, response.content[-2000:]
    experiment = Experiment.objects.get(slug="from-admin")
    assert experiment.arms[0]["hash"] and len(experiment.registration_hash) == 64
    assert experiment.evaluation["windows"] == 2 and experiment.criterion["stat"] == "ci_high"


def test_the_page_recomputes_the_registration_hash_and_says_when_the_stored_text_no_longer_matches(client):
    experiment = tiny_experiment()
    assert "it matches" in client.get("/benchmarks/experiments/tiny/").content.decode()
    Experiment.objects.filter(pk=experiment.pk).update(hypothesis=experiment.hypothesis + " Edited.")
    page = client.get("/benchmarks/experiments/tiny/").content.decode()
    assert "the stored text no longer matches this sha256" in page
    assert client.get("/api/experiments/tiny/").json()["registration_intact"] is False


def test_an_experiment_measures_past_a_models_serving_cap_up_to_its_own_cap():
    from eqlm.limits import DEPTH_CAP_MAX, EXPERIMENT_DEPTH_MAX
    from experiments_app.spec import normalize_evaluation

    assert EXPERIMENT_DEPTH_MAX > DEPTH_CAP_MAX
    evaluation = normalize_evaluation({"depths": [1, EXPERIMENT_DEPTH_MAX], "budgets": [EXPERIMENT_DEPTH_MAX]})
    assert evaluation["depths"][-1] == evaluation["budgets"][-1] == EXPERIMENT_DEPTH_MAX
    with pytest.raises(ValueError, match="depths"):
        normalize_evaluation({"depths": [EXPERIMENT_DEPTH_MAX + 1]})
