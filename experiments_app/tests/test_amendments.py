"""A hypothesis reworded for readers after launch: dated and hashed beside the registration, which never moves."""

import json

import pytest

from experiments_app import amendments, services
from experiments_app.models import Experiment
from experiments_app.seed import load_fixture

from .factories import tiny_experiment

pytestmark = pytest.mark.django_db
REWORDED = "At depth 4, the tiny model trained at a higher learning rate is no worse than at the base rate."


def launched(django_capture_on_commit_callbacks, staff_client) -> Experiment:
    experiment = tiny_experiment()
    with django_capture_on_commit_callbacks(execute=False):
        assert staff_client.post("/api/experiments/tiny/runs/").status_code == 202
    return Experiment.objects.get(pk=experiment.pk)


def test_a_launched_experiment_takes_a_rewording_that_leaves_its_registration_and_runs_alone(
    staff_client, client, django_capture_on_commit_callbacks
):
    experiment = launched(django_capture_on_commit_callbacks, staff_client)
    registered, text = experiment.registration_hash, experiment.hypothesis
    runs = list(experiment.runs.values_list("pk", "arm_label", "seed", "recipe_hash"))

    response = staff_client.patch("/api/experiments/tiny/", {"summary": REWORDED}, content_type="application/json")

    assert response.status_code == 200, response.content
    body = client.get("/api/experiments/tiny/").json()
    assert body["hypothesis"] == REWORDED and body["registration_hash"] == registered
    assert body["registration_intact"] is True and body["amendment"]["amendment_intact"] is True
    assert body["amendment"]["amended_at"] and len(body["amendment"]["amendment_hash"]) == 64
    assert body["amendment"]["amendment_hash"] != registered
    record = client.get(body["registration_record"]).json()
    assert record["registered"]["hypothesis"] == text and record["registration_hash"] == registered
    assert record["amendment"]["hypothesis"] == REWORDED
    experiment.refresh_from_db()
    assert list(experiment.runs.values_list("pk", "arm_label", "seed", "recipe_hash")) == runs
    page = client.get("/benchmarks/experiments/tiny/").content.decode()
    assert REWORDED in page and text not in page and "registration record" in page


def test_the_registered_fields_stay_frozen_while_the_wording_is_amended(
    staff_client, django_capture_on_commit_callbacks
):
    launched(django_capture_on_commit_callbacks, staff_client)
    body = {"summary": REWORDED, "hypothesis": "Something else."}
    response = staff_client.patch("/api/experiments/tiny/", body, content_type="application/json")
    assert response.status_code == 409 and response.json()["error"]["code"] == "experiment_frozen"
    assert Experiment.objects.get(slug="tiny").summary == ""


def test_the_same_rewording_again_keeps_its_date_and_the_registered_wording_withdraws_it():
    experiment = tiny_experiment()
    first = amendments.amend(experiment, REWORDED)
    again = amendments.amend(first, REWORDED + "\n")
    assert again.amended_at == first.amended_at and again.amendment_hash == first.amendment_hash
    withdrawn = amendments.amend(again, experiment.hypothesis)
    assert (withdrawn.summary, withdrawn.amended_at, withdrawn.amendment_hash) == ("", None, "")
    assert amendments.amendment_intact(withdrawn)


def test_a_rewording_edited_behind_the_hash_is_flagged_on_the_page(client):
    experiment = amendments.amend(tiny_experiment(), REWORDED)
    Experiment.objects.filter(pk=experiment.pk).update(summary=REWORDED + " Edited.")
    assert client.get("/api/experiments/tiny/").json()["amendment"]["amendment_intact"] is False
    assert "no longer matches" in client.get("/benchmarks/experiments/tiny/").content.decode()


def test_a_rewording_made_before_launch_follows_the_registered_fields_it_is_hashed_with(staff_client):
    amendments.amend(tiny_experiment(), REWORDED)
    response = staff_client.patch("/api/experiments/tiny/", {"seeds": [1, 2, 3]}, content_type="application/json")
    assert response.status_code == 200 and response.json()["amendment"]["amendment_intact"] is True


def test_the_seed_refuses_a_registration_that_does_not_hash_to_its_recorded_sha256(tmp_path):
    from experiments_app.seed import FIXTURE

    data = json.loads(FIXTURE.read_text())
    item = next(e for e in data["experiments"] if e["slug"] == "depth-curve")
    item["registration"]["registration_hash"] = "0" * 64  # the registered text (CHANGELOG.md) no longer matches it
    data["experiments"] = [item]
    path = tmp_path / "experiments.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="hashes to"):
        load_fixture(path)
    assert not Experiment.objects.filter(slug="depth-curve").exists()


def test_the_registered_texts_of_reworded_experiments_are_the_working_historys_and_the_fixture_holds_none():
    from experiments_app.seed import FIXTURE, registered_texts

    items = json.loads(FIXTURE.read_text())["experiments"]
    reworded = {item["slug"] for item in items if item.get("amended_at")}
    assert reworded and reworded <= set(registered_texts())
    assert not any("hypothesis" in (item.get("registration") or {}) for item in items)


def test_the_bundled_registrations_hash_as_recorded_and_their_rewordings_are_dated():
    load_fixture()
    for experiment in Experiment.objects.all():
        assert services.registration_intact(experiment) and amendments.amendment_intact(experiment)
        if experiment.summary:
            assert experiment.amended_at and experiment.amended_at > experiment.registered_at
