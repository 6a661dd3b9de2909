"""Hostile result files on every upload operation of the schema: row-level errors, nothing kept, retries allowed.

A module of its own: these tests commit (the ingest runs on commit, as after a real request), which cannot happen
inside the seeded transaction that tests/test_input_classes.py holds open for its module.
"""

import json
import os

import pytest
from django.test import Client
from drf_spectacular.generators import SchemaGenerator

from .fuzzing import portal_hints, schema_operations
from .hostile import media_files, tried_by_kind, unfinished_jobs
from .hostile_uploads import attack_uploads, upload_field
from .report import record

pytestmark = pytest.mark.django_db(transaction=True)
EXAMPLES = int(os.environ.get("HOSTILE_EXAMPLES", "1"))


@pytest.mark.slow  # every operation or route, every class: a minute or two on a shared machine
def test_every_upload_operation_turns_hostile_files_into_row_level_errors(staff_user):
    found = [op for op in schema_operations() if upload_field(op)]
    assert "POST /api/benchmarks/uploads/" in [op.name for op in found]
    staff = Client()
    staff.force_login(staff_user)
    hints = portal_hints()
    outcomes = [attack_uploads(op, staff, hints, EXAMPLES) for op in found]
    failures = [failure for outcome in outcomes for failure in outcome.failures]
    record(
        "hostile-uploads",
        {"operations": len(outcomes), "tried": tried_by_kind(outcomes), "failures": failures},
    )
    assert failures == []
    assert unfinished_jobs() == []


# --- result files: row-level errors, retries, nothing kept ---------------------------------------------------

UPLOADS = "/api/benchmarks/uploads/"


def upload_bytes(client, data: bytes, hint: str = "scale/exp32/seed42.json"):
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.test import TestCase

    with TestCase.captureOnCommitCallbacks(execute=True):
        return client.post(UPLOADS, {"file": [SimpleUploadedFile("seed42.json", data)], "path": [hint]})


def harness_file(**changes) -> bytes:
    from benchmarks_app.tests.factories import harness_b_bytes

    data = json.loads(harness_b_bytes())
    data.update(changes)
    return json.dumps(data, ensure_ascii=True).encode()


def test_a_result_file_holding_a_lone_surrogate_fails_with_a_row_level_error_and_keeps_nothing(staff_client):
    from results.models import ResultRow, SourceFile

    media_before = media_files()
    response = upload_bytes(staff_client, harness_file(git_commit="ab\ud800cd"))  # sent as a \ud800 escape
    assert response.status_code == 202
    item = response.json()["uploads"][0]
    assert item["status"] == "failed" and item["duplicate"] is False  # the row's real status, not "queued"
    row = SourceFile.objects.get(pk=item["id"])
    assert row.status == "failed" and "surrogate" in row.error
    assert row.errors[0]["pointer"] and "surrogate" in row.errors[0]["message"]
    assert not row.file and media_files() == media_before  # the refused file is not kept
    assert not ResultRow.objects.exists()


def test_a_failed_upload_can_be_retried_and_is_not_a_duplicate(staff_client):
    from results.models import SourceFile

    bad = harness_file(git_commit="a\x00b")  # sent as a \u0000 escape
    first = upload_bytes(staff_client, bad).json()["uploads"][0]
    again = upload_bytes(staff_client, bad).json()["uploads"][0]
    assert first["status"] == again["status"] == "failed"
    assert again["duplicate"] is False and again["id"] != first["id"]
    good = upload_bytes(staff_client, harness_file()).json()["uploads"][0]
    assert good["status"] == "done" and good["message"] == "Ingested."
    assert SourceFile.objects.filter(status__in=["queued", "running"]).count() == 0


def test_the_upload_answer_matches_its_schema(staff_client):
    schema = SchemaGenerator().get_schema(request=None, public=True)
    answer = schema["paths"][UPLOADS]["post"]["responses"]["202"]["content"]["application/json"]["schema"]
    component = schema["components"]["schemas"][answer["$ref"].rsplit("/", 1)[1]]
    assert list(component["properties"]) == ["uploads"] and component["properties"]["uploads"]["type"] == "array"
    item_name = component["properties"]["uploads"]["items"]["$ref"].rsplit("/", 1)[1]
    documented = set(schema["components"]["schemas"][item_name]["properties"])
    body = upload_bytes(staff_client, harness_file()).json()
    assert set(body) == {"uploads"} and set(body["uploads"][0]) == documented


def test_a_path_hint_holding_a_nul_is_refused_before_anything_is_stored(staff_client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from results.models import SourceFile

    media_before = media_files()
    data = {"file": [SimpleUploadedFile("seed42.json", harness_file())], "path": ["scale/exp32/\x00seed42.json"]}
    response = staff_client.post(UPLOADS, data)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["param"] == "path" and "NUL" in error["message"]
    assert not SourceFile.objects.exists() and media_files() == media_before


# --- multipart fields: held to UTF-8 like every other body -----------------------------------------------------


def multipart_body(hint: bytes, filename: bytes = b"seed42.json") -> tuple[bytes, str]:
    boundary = "b0undary"
    body = (
        f"--{boundary}\r\n".encode()
        + b'Content-Disposition: form-data; name="file"; filename="'
        + filename
        + b'"\r\nContent-Type: application/json\r\n\r\n'
        + harness_file()
        + f"\r\n--{boundary}\r\n".encode()
        + b'Content-Disposition: form-data; name="path"\r\n\r\n'
        + hint
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return body, f"multipart/form-data; boundary={boundary}"


@pytest.mark.parametrize(
    "hint, filename",
    [(b"scale/exp32/\xffseed42.json", b"seed42.json"), (b"scale/exp32/seed42.json", b"seed\xc3\x28.json")],
    ids=["field", "file-name"],
)
def test_a_multipart_field_or_file_name_that_is_not_utf8_is_a_400_and_nothing_is_stored(staff_client, hint, filename):
    from results.models import SourceFile

    media_before = media_files()
    body, content_type = multipart_body(hint, filename)
    response = staff_client.generic("POST", UPLOADS, body, content_type=content_type)
    assert response.status_code == 400
    error = response.json()["error"]
    if b"\xff" in hint:
        assert error["code"] == "invalid_encoding" and "not valid UTF-8" in error["message"]
    else:  # Django's parser drops a part whose headers are not UTF-8: the file never reaches the view
        assert error["param"] == "file"
    assert not SourceFile.objects.exists() and media_files() == media_before


def test_the_staff_upload_page_refuses_a_form_field_that_is_not_utf8(staff_client):
    from results.models import SourceFile

    media_before = media_files()
    body, content_type = multipart_body(b"scale/\xe2\x82/seed42.json")
    body = body.replace(b'name="path"', b'name="paths"')
    response = staff_client.generic("POST", "/benchmarks/uploads/", body, content_type=content_type)
    assert response.status_code == 400
    assert not SourceFile.objects.exists() and media_files() == media_before


def test_valid_non_ascii_multipart_fields_still_upload(staff_client):
    body, content_type = multipart_body("scale/exp32/résultat\ufffd/seed42.json".encode())
    from django.test import TestCase

    with TestCase.captureOnCommitCallbacks(execute=True):
        response = staff_client.generic("POST", UPLOADS, body, content_type=content_type)
    assert response.status_code == 202
    assert response.json()["uploads"][0]["status"] == "done"


def test_a_multipart_body_that_declares_utf8_is_held_to_it_too(staff_client):
    body, content_type = multipart_body(b"scale/exp32/\xffseed42.json")
    response = staff_client.generic("POST", UPLOADS, body, content_type=content_type + "; charset=UTF-8")
    assert response.status_code == 400 and response.json()["error"]["code"] == "invalid_encoding"
