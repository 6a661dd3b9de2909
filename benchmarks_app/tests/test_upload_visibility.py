"""An upload that adds rows to the programme's record asks first, naming the tables it changes; once in, every table
built on it marks the uploaded rows (who, when, no hash or commit) and shows the seeds behind each figure."""

import json
import os
import time

import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile

from benchmarks_app.upload_review import HOLD_TTL_S, PENDING_DIR
from results.models import ResultRow, SourceFile

pytestmark = pytest.mark.django_db
PAGE = "/benchmarks/uploads/"
SEED45 = json.dumps({str(b): {"accuracy": a, "num_correct": int(a * 1000), "num_total": 1000}
                     for b, a in ((4, 0.61), (8, 0.66), (12, 0.68))}).encode()  # fmt: skip
HINT = "exp13_seed45/budget_sweep.json"


def uploads():
    """What staff uploaded (the seed's own files have no uploader)."""
    return SourceFile.objects.filter(uploader__isnull=False)


def post_upload(staff_client, capture, data=SEED45, hint=HINT):
    with capture(execute=True):
        return staff_client.post(PAGE, {"file": [SimpleUploadedFile("budget_sweep.json", data)], "paths": hint})


def test_an_upload_into_a_programme_experiment_waits_for_confirmation_naming_the_tables(
    staff_client, seeded, django_capture_on_commit_callbacks
):
    before = ResultRow.objects.count()
    response = post_upload(staff_client, django_capture_on_commit_callbacks)
    html = response.content.decode()
    assert response.status_code == 200 and "This upload changes the programme" in html
    assert 'href="/benchmarks/f24-budget-sweep/"' in html and "rows of exp13" in html
    assert not uploads().exists() and ResultRow.objects.count() == before

    token = html.split('name="held" value="')[1].split('"')[0]
    with django_capture_on_commit_callbacks(execute=True):
        staff_client.post(PAGE, {"held": token, "decision": "confirm"})
    assert ResultRow.objects.filter(experiment="exp13", seed=45).count() == 3
    # The token works once.
    with django_capture_on_commit_callbacks(execute=True):
        again = staff_client.post(PAGE, {"held": token, "decision": "confirm"}, follow=True)
    assert "no longer waiting" in again.content.decode()
    assert uploads().count() == 1


def test_cancelling_stores_nothing(staff_client, seeded, django_capture_on_commit_callbacks):
    html = post_upload(staff_client, django_capture_on_commit_callbacks).content.decode()
    token = html.split('name="held" value="')[1].split('"')[0]
    response = staff_client.post(PAGE, {"held": token, "decision": "cancel"}, follow=True)
    assert "nothing was stored" in response.content.decode()
    assert not uploads().exists() and not ResultRow.objects.filter(seed=45).exists()


def age(token: str, seconds: float) -> None:
    """Make a held upload `seconds` old."""
    path = default_storage.path(f"{PENDING_DIR}/{token}.json")
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_a_hold_that_nobody_answers_expires_and_leaves_no_file(
    staff_client, seeded, django_capture_on_commit_callbacks
):
    html = post_upload(staff_client, django_capture_on_commit_callbacks).content.decode()
    abandoned = html.split('name="held" value="')[1].split('"')[0]
    age(abandoned, HOLD_TTL_S + 60)
    html = post_upload(staff_client, django_capture_on_commit_callbacks).content.decode()
    waiting = html.split('name="held" value="')[1].split('"')[0]
    # the next upload's hold removed the abandoned one; its own still waits
    held = default_storage.listdir(PENDING_DIR)[1]
    assert f"{abandoned}.json" not in held and f"{waiting}.json" in held

    age(waiting, HOLD_TTL_S + 60)  # the uploader comes back a day later: the token is refused, and its file goes
    with django_capture_on_commit_callbacks(execute=True):
        late = staff_client.post(PAGE, {"held": waiting, "decision": "confirm"}, follow=True)
    assert "no longer waiting" in late.content.decode()
    assert f"{waiting}.json" not in default_storage.listdir(PENDING_DIR)[1]
    assert not uploads().exists() and not ResultRow.objects.filter(seed=45).exists()


def test_a_table_with_uploaded_rows_marks_them_and_shows_n_per_figure(
    staff_client, seeded, django_capture_on_commit_callbacks
):
    from django.core.cache import cache

    html = post_upload(staff_client, django_capture_on_commit_callbacks).content.decode()
    token = html.split('name="held" value="')[1].split('"')[0]
    with django_capture_on_commit_callbacks(execute=True):
        staff_client.post(PAGE, {"held": token, "decision": "confirm"})
    cache.clear()
    table = staff_client.get("/benchmarks/f24-budget-sweep/").content.decode()
    assert "This table includes uploaded rows" in table
    assert "3 rows from <code>exp13_seed45/budget_sweep.json</code> (seed 45), uploaded by staff on" in table
    assert "(n=4)" in table  # the mean over four seeds...
    assert "(n=3)" in table  # ...beside the ratio over the three seeds paired with the baseline
    assert ">uploaded by staff</span>" in table and "none: an upload" in table
    assert "includes uploaded rows" in staff_client.get("/benchmarks/").content.decode()


def test_an_upload_for_the_portals_own_experiments_goes_straight_in(
    staff_client, seeded, django_capture_on_commit_callbacks
):
    records = [{"run": "local/x", "experiment": "local", "arm": "eqlm-demo", "seed": 0, "metric": "blimp_accuracy",
                "value": 0.5, "n": 10, "condition": {"depth": 4}}]  # fmt: skip
    response = post_upload(
        staff_client, django_capture_on_commit_callbacks, data=json.dumps(records).encode(), hint="local/rows.json"
    )
    assert response.status_code == 302
    assert uploads().count() == 1
