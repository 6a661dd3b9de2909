"""Uploading result files: who may, what is stored, and what a bad file leaves behind (nothing)."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from results.models import ResultRow, SourceFile

from .factories import harness_b_bytes

pytestmark = pytest.mark.django_db
URL = "/api/benchmarks/uploads/"
_capture = None


@pytest.fixture(autouse=True)
def _run_on_commit(django_capture_on_commit_callbacks):
    """Eager Celery inside a test transaction: run the queued ingest as the commit would."""
    global _capture
    _capture = django_capture_on_commit_callbacks
    yield


def upload(client, *files, paths=None, **extra):
    data = {"file": [SimpleUploadedFile(name, content) for name, content in files]}
    if paths:
        data["path"] = paths
    data.update(extra)
    with _capture(execute=True):
        return client.post(URL, data)


def test_anonymous_visitor_cannot_upload(client):
    response = upload(client, ("seed42.json", harness_b_bytes()))
    assert response.status_code == 403
    assert response.json()["error"]["type"] == "permission_error"
    assert not SourceFile.objects.exists()


def test_member_without_staff_rights_cannot_upload(member_client):
    assert upload(member_client, ("seed42.json", harness_b_bytes())).status_code == 403
    assert not SourceFile.objects.exists()


def test_outsiders_cannot_read_upload_status(client, member_client, staff_client):
    body = upload(staff_client, ("seed42.json", harness_b_bytes()), paths=["scale/exp32/seed42.json"]).json()
    pk = body["uploads"][0]["id"]
    client.logout()
    assert client.get(f"{URL}{pk}/").status_code == 403


def test_staff_upload_is_accepted_ingested_and_reported(staff_client):
    response = upload(staff_client, ("seed42.json", harness_b_bytes()), paths=["scale/exp32/seed42.json"])
    assert response.status_code == 202
    upload_id = response.json()["uploads"][0]["id"]
    status = staff_client.get(f"{URL}{upload_id}/").json()
    assert status["status"] == "done" and status["detected_format"] == "harness_b"
    assert status["rows_created"] == ResultRow.objects.count() > 0
    row = ResultRow.objects.get(metric="blimp_accuracy")
    assert (row.experiment, row.arm_label, row.seed, row.value) == ("exp32", "C1", 42, 0.663)
    assert row.source_pointer == "/arms/C1/blimp_accuracy" and row.arm.run.run_id == "scale/exp32/seed42"


def test_exp32_upload_into_an_empty_database_gives_the_f45_figures(staff_client, shared_dir):
    root = shared_dir / "anchor-results"
    files, paths = [], []
    for seed in (42, 43, 44):
        files.append((f"seed{seed}.json", (root / f"scale/exp32/seed{seed}.json").read_bytes()))
        paths.append(f"scale/exp32/seed{seed}.json")
        for name in ("results.json", "config.yaml"):
            files.append((name, (root / f"exp10_5090/exp10_seed{seed}/{name}").read_bytes()))
            paths.append(f"exp10_5090/exp10_seed{seed}/{name}")
    assert not ResultRow.objects.exists()
    response = upload(staff_client, *files, paths=paths)
    assert response.status_code == 202 and len(response.json()["uploads"]) == 6
    body = staff_client.get(
        "/api/benchmarks/compare", {"treatment": "exp32:C1", "baseline": "exp10_5090:A1", "metric": "blimp_accuracy"}
    ).json()
    r = body["ratio"]
    assert [round(r[k], 4) for k in ("mean", "ci_low", "ci_high", "sd")] == [0.9582, 0.9394, 0.9721, 0.0169]
    assert body["treatment"]["n"] == body["baseline"]["n"] == 3 and r["method"] == "bootstrap"
    assert {p["run"] for p in body["provenance"]} >= {"scale/exp32/seed42", "exp10_5090/exp10_seed44"}
    assert all(p["config_hash"] for p in body["provenance"])


def test_uploading_the_same_bytes_again_is_a_no_op_that_says_so(staff_client):
    first = upload(staff_client, ("seed42.json", harness_b_bytes()), paths=["scale/exp32/seed42.json"]).json()
    rows = ResultRow.objects.count()
    again = upload(staff_client, ("seed42.json", harness_b_bytes()), paths=["scale/exp32/seed42.json"]).json()
    assert again["uploads"][0]["duplicate"] is True
    assert again["uploads"][0]["id"] == first["uploads"][0]["id"]
    assert "nothing new" in again["uploads"][0]["message"]
    assert ResultRow.objects.count() == rows and SourceFile.objects.count() == 1


def test_a_malformed_file_creates_no_rows_and_reports_where(staff_client):
    bad = json.loads(harness_b_bytes())
    bad["arms"]["C1"]["loss_curve"][1]["loss"] = "seven"
    response = upload(staff_client, ("seed42.json", json.dumps(bad).encode()), paths=["scale/exp32/seed42.json"])
    status = staff_client.get(response.json()["uploads"][0]["url"]).json()
    assert status["status"] == "failed" and status["rows_created"] == 0
    assert status["errors"][0]["pointer"] == "/arms/C1/loss_curve/1/loss"
    assert not ResultRow.objects.exists()


def test_truncated_json_reports_the_line(staff_client):
    response = upload(staff_client, ("results.json", harness_b_bytes()[:-20]), paths=["exp13_seed42/results.json"])
    status = staff_client.get(response.json()["uploads"][0]["url"]).json()
    assert status["status"] == "failed" and "line" in status["errors"][0]
    assert not ResultRow.objects.exists()


def test_an_unknown_format_names_the_formats_understood(staff_client):
    response = upload(staff_client, ("notes.json", b'{"hello": "world"}'))
    status = staff_client.get(response.json()["uploads"][0]["url"]).json()
    assert status["status"] == "failed"
    assert "harness_a" in status["error"] and "generic_csv" in status["error"]


def test_a_file_over_the_size_limit_is_refused_before_it_is_stored(staff_client, settings):
    settings.UPLOAD_MAX_BYTES = 1000
    response = upload(staff_client, ("seed42.json", harness_b_bytes() + b" " * 2000), ("ok.json", b"{}"))
    assert response.status_code == 413 and response.json()["error"]["code"] == "too_large"
    assert response.json()["error"]["message"].startswith("seed42.json: over the 1,000-byte limit")
    assert not SourceFile.objects.exists()


def test_a_lone_config_yaml_is_refused_with_advice(staff_client):
    response = upload(staff_client, ("config.yaml", b"training:\n  seed: 42\n"), paths=["exp10_5090/x/config.yaml"])
    assert response.status_code == 400 and "results.json" in response.json()["error"]["message"]


def test_harness_a_uploaded_alone_takes_its_seed_from_the_path_and_marks_it_inferred(staff_client, shared_dir):
    data = (shared_dir / "anchor-results/exp10_5090/exp10_seed43/results.json").read_bytes()
    upload(staff_client, ("results.json", data), paths=["exp10_5090/exp10_seed43/results.json"])
    row = ResultRow.objects.filter(metric="blimp_accuracy", arm_label="A1").select_related("arm__run").get()
    assert row.seed == 43 and row.arm.run.seed_inferred is True


def test_generic_csv_upload_needs_no_code(staff_client):
    csv_text = (
        "run,experiment,arm,seed,metric,value,unit,n,condition\n"
        'new/run1,exp77,X1,1,blimp_accuracy,0.61,fraction,1000,"{""depth"": 4}"\n'
        "new/run1,exp77,X1,1,final_loss,3.2,nats,,\n"
    )
    response = upload(staff_client, ("rows.csv", csv_text.encode()))
    status = staff_client.get(response.json()["uploads"][0]["url"]).json()
    assert status["status"] == "done" and status["rows_created"] == 2
    assert ResultRow.objects.get(metric="blimp_accuracy").condition == {"depth": 4}


def test_the_staff_upload_page_ingests_and_lists_uploads(staff_client):
    with _capture(execute=True):
        response = staff_client.post(
            "/benchmarks/uploads/",
            {"file": [SimpleUploadedFile("seed44.json", harness_b_bytes(44))], "paths": "scale/exp32/seed44.json"},
            follow=True,
        )
    html = response.content.decode()
    assert "queued as upload" in html and "scale/exp32/seed44.json" in html
    assert ResultRow.objects.filter(seed=44).exists()
    upload = SourceFile.objects.latest("pk")  # each row names the API URL its status is polled from
    assert f'<tr data-upload="{upload.pk}" data-endpoint="/api/benchmarks/uploads/{upload.pk}/">' in html


def test_the_upload_page_is_for_staff_only(client, member_client):
    assert client.get("/benchmarks/uploads/").status_code == 302
    assert member_client.get("/benchmarks/uploads/").status_code == 302


def test_staff_can_upload_through_the_admin_and_the_file_is_ingested(staff_client):
    with _capture(execute=True):
        response = staff_client.post(
            "/admin/results/sourcefile/add/",
            {
                "file": SimpleUploadedFile("seed43.json", harness_b_bytes(43)),
                "path_hint": "scale/exp32/seed43.json",
                "requested_format": "",
            },  # fmt: skip
        )
    assert response.status_code == 302
    source = SourceFile.objects.get()
    assert source.status == "done" and source.rows_created > 0 and source.uploader.username == "staff"
    assert ResultRow.objects.filter(seed=43, experiment="exp32").exists()


def test_the_upload_page_refuses_a_file_over_the_limit_and_checks_csrf(staff_client, settings, staff_user):
    settings.UPLOAD_MAX_BYTES = 1000
    response = staff_client.post(
        "/benchmarks/uploads/", {"file": [SimpleUploadedFile("big.json", b" " * 3000)]}, follow=True
    )
    assert "over the 1,000-byte limit" in response.content.decode() and not SourceFile.objects.exists()
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(staff_user)
    assert strict.post("/benchmarks/uploads/", {"file": [SimpleUploadedFile("a.json", b"{}")]}).status_code == 403


def test_an_admin_upload_without_a_file_is_a_form_error_and_stores_nothing(staff_client):
    response = staff_client.post(
        "/admin/results/sourcefile/add/", {"path_hint": "scale/exp32/seed43.json", "requested_format": ""}
    )
    assert response.status_code == 200
    assert "This field is required." in response.content.decode()
    assert not SourceFile.objects.exists()


def test_an_upload_row_without_a_file_ends_failed_with_a_message():
    from benchmarks_app.uploads import ingest_source_file

    source = SourceFile.objects.create(path_hint="orphan.json")
    source = ingest_source_file(source.pk)
    assert source.status == "failed"
    assert "no file" in source.error
    assert not ResultRow.objects.exists()


def test_an_ingest_that_crashes_ends_failed_instead_of_running_forever(settings, tmp_path):
    from benchmarks_app.tasks import ingest_upload

    settings.MEDIA_ROOT = str(tmp_path)
    source = SourceFile.objects.create(path_hint="gone.json", file="benchmarks/uploads/gone.json")  # not on disk
    result = ingest_upload.apply(args=[source.pk], throw=False)
    assert isinstance(result.result, FileNotFoundError)  # the worker logs the traceback
    source.refresh_from_db()
    assert source.status == "failed"
    assert "unexpected error (FileNotFoundError)" in source.error
    assert str(tmp_path) not in source.error  # no server paths in what users read
    assert not ResultRow.objects.exists()
