"""Every write path for the three personas (anonymous, member, staff), with CSRF enforced as a browser would meet it.

The Django test client skips CSRF checks unless asked; these tests build clients with `enforce_csrf_checks=True`
so a session-authenticated write without the token is refused, exactly as in production.
"""

import io
import re

import pytest
from django.contrib import admin
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from lab_app.models import LabRun
from results.models import SourceFile

pytestmark = pytest.mark.django_db

LAB_JOB = {"game": "biased_rps", "solver": "mmd", "params": {"steps": 50}}
LAB_SOLVE = {"game": "biased_rps", "solver": "qre", "params": {"lambda": 10}}
RESULT_FILE = b'{"experiment": "exp13_contraction_at_width", "seed": 7, "arms": {}}'


def csrf_client(user=None) -> Client:
    client = Client(enforce_csrf_checks=True)
    if user is not None:
        client.force_login(user)
    return client


def csrf_token(client: Client, url: str = "/admin/login/") -> str:
    """The token a real browser holds after opening a form page (its cookie; the page's hidden field matches it)."""
    client.get(url)
    if "csrftoken" not in client.cookies:  # a signed-in staff member is redirected away from the login page
        fresh = Client()
        fresh.get("/admin/login/")
        client.cookies["csrftoken"] = fresh.cookies["csrftoken"].value
    return client.cookies["csrftoken"].value


@pytest.fixture
def personas(member_user, staff_user):
    return {"anonymous": None, "member": member_user, "staff": staff_user}


def admin_add_urls() -> list[str]:
    return [
        reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_add")
        for model in admin.site._registry
        if model._meta.app_label not in {"auth", "contenttypes", "sessions"}
    ]


# --- result-file uploads (page and API) -----------------------------------------------------------------


def test_only_staff_reach_the_upload_page(personas):
    for name, user in personas.items():
        response = csrf_client(user).get("/benchmarks/uploads/")
        if name == "staff":
            assert response.status_code == 200
            assert 'name="csrfmiddlewaretoken"' in response.content.decode()
        else:
            assert response.status_code == 302 and "/admin/login/" in response["Location"], name


def test_upload_form_refuses_a_post_without_the_csrf_token_even_from_staff(staff_user):
    client = csrf_client(staff_user)
    response = client.post("/benchmarks/uploads/", {"file": SimpleUploadedFile("a.json", RESULT_FILE)})
    assert response.status_code == 403
    assert not SourceFile.objects.exists()


def test_outsiders_posting_to_the_upload_form_store_nothing(personas):
    for name in ("anonymous", "member"):
        client = csrf_client(personas[name])
        token = csrf_token(client)
        response = client.post(
            "/benchmarks/uploads/",
            {"file": SimpleUploadedFile("a.json", RESULT_FILE), "csrfmiddlewaretoken": token},
        )
        assert response.status_code == 302 and "/admin/login/" in response["Location"], name
    assert not SourceFile.objects.exists()


def test_staff_upload_form_with_the_token_stores_the_file(staff_user, django_capture_on_commit_callbacks):
    client = csrf_client(staff_user)
    token = csrf_token(client, "/benchmarks/uploads/")
    with django_capture_on_commit_callbacks(execute=False):
        response = client.post(
            "/benchmarks/uploads/",
            {"file": SimpleUploadedFile("seed7.json", RESULT_FILE), "csrfmiddlewaretoken": token},
        )
    assert response.status_code == 302
    assert SourceFile.objects.count() == 1


def test_upload_api_answers_outsiders_in_the_error_shape_and_stores_nothing(personas):
    for name in ("anonymous", "member"):
        client = csrf_client(personas[name])
        response = client.post("/api/benchmarks/uploads/", {"file": SimpleUploadedFile("a.json", RESULT_FILE)})
        assert response.status_code == 403, name
        assert set(response.json()["error"]) >= {"message", "type", "param", "code"}
    assert not SourceFile.objects.exists()


def test_upload_api_needs_the_csrf_token_with_a_session(staff_user, django_capture_on_commit_callbacks):
    client = csrf_client(staff_user)
    refused = client.post("/api/benchmarks/uploads/", {"file": SimpleUploadedFile("a.json", RESULT_FILE)})
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["error"]["message"]
    assert not SourceFile.objects.exists()
    token = csrf_token(client)
    with django_capture_on_commit_callbacks(execute=False):
        accepted = client.post(
            "/api/benchmarks/uploads/",
            {"file": SimpleUploadedFile("a.json", RESULT_FILE)},
            HTTP_X_CSRFTOKEN=token,
        )
    assert accepted.status_code == 202, accepted.content
    assert SourceFile.objects.count() == 1


# --- lab jobs (public by design: anyone may solve, but a session still needs its token) -----------------


def test_anonymous_visitors_may_solve_and_queue_lab_jobs(django_capture_on_commit_callbacks):
    client = csrf_client()
    assert client.post("/api/lab/solve", LAB_SOLVE, content_type="application/json").status_code == 200
    with django_capture_on_commit_callbacks(execute=False):
        response = client.post("/api/lab/jobs/", LAB_JOB, content_type="application/json")
    assert response.status_code == 201
    assert LabRun.objects.get().owner is None


@pytest.mark.parametrize("who", ["member", "staff"])
def test_signed_in_lab_writes_need_the_csrf_token(personas, who, django_capture_on_commit_callbacks):
    client = csrf_client(personas[who])
    for url, body in (("/api/lab/solve", LAB_SOLVE), ("/api/lab/jobs/", LAB_JOB)):
        refused = client.post(url, body, content_type="application/json")
        assert refused.status_code == 403, url
        assert refused.json()["error"]["type"] == "permission_error"
    assert not LabRun.objects.exists()
    token = csrf_token(client)
    with django_capture_on_commit_callbacks(execute=False):
        response = client.post("/api/lab/jobs/", LAB_JOB, content_type="application/json", HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 201
    assert LabRun.objects.get().owner == personas[who]


# --- model uploads ---------------------------------------------------------------------------------------


def checkpoint_file() -> io.BytesIO:
    fh = io.BytesIO(b"not a checkpoint at all")
    fh.name = "model.pt"
    return fh


@pytest.mark.slow  # checkpoint probe subprocess
def test_outsiders_cannot_upload_a_model_and_staff_need_the_token(personas):
    from models_app.models import RegisteredModel

    for name in ("anonymous", "member"):
        response = csrf_client(personas[name]).post("/api/models/", {"checkpoint": checkpoint_file(), "name": "x"})
        assert response.status_code == 403, name
    staff = csrf_client(personas["staff"])
    assert staff.post("/api/models/", {"checkpoint": checkpoint_file(), "name": "x"}).status_code == 403
    token = csrf_token(staff)
    # Past the permission and CSRF checks, the staff upload reaches validation: junk bytes are a 400, not a 500.
    response = staff.post("/api/models/", {"checkpoint": checkpoint_file(), "name": "x"}, HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 400
    assert set(response.json()["error"]) >= {"message", "type", "param", "code"}
    assert not RegisteredModel.objects.exists()


# --- the admin: every add form, API keys ----------------------------------------------------------------


def test_outsiders_are_sent_to_the_login_page_from_every_admin_form(personas):
    urls = admin_add_urls()
    assert len(urls) >= 15
    for name in ("anonymous", "member"):
        client = csrf_client(personas[name])
        for url in urls:
            response = client.get(url)
            assert response.status_code == 302 and "/admin/login/" in response["Location"], (name, url)
            posted = client.post(url, {"name": "intruder"})
            assert posted.status_code in (302, 403), (name, url)


def test_every_admin_form_staff_can_open_carries_a_csrf_token_and_refuses_a_post_without_it(personas):
    client = csrf_client(personas["staff"])
    opened = 0
    for url in admin_add_urls():
        page = client.get(url)
        assert page.status_code in (200, 403), url  # 403: the model is read-only in the admin
        if page.status_code == 200:
            opened += 1
            forms = re.findall(r"<form[^>]*method=\"post\"[^>]*>.*?</form>", page.content.decode(), re.S | re.I)
            assert forms and all("csrfmiddlewaretoken" in form for form in forms), url
            assert client.post(url, {"name": "no token"}).status_code == 403, url
    assert opened >= 5


def test_api_keys_are_issued_by_staff_only_shown_once_and_stored_hashed(personas, caplog):
    from inference.models import ApiKey, hash_key

    url = "/admin/inference/apikey/add/"
    for name in ("anonymous", "member"):
        client = csrf_client(personas[name])
        client.post(url, {"name": "sneaky", "csrfmiddlewaretoken": csrf_token(client)})
    assert not ApiKey.objects.exists()

    client = csrf_client(personas["staff"])
    token = csrf_token(client, url)
    with caplog.at_level("DEBUG"):
        issued = client.post(
            url, {"name": "ci", "requests_per_minute": 60, "tokens_per_minute": 1000, "csrfmiddlewaretoken": token}
        )
        assert issued.status_code == 200
        raw = re.search(r"eqlm-[A-Za-z0-9_-]{20,}", issued.content.decode()).group(0)
        assert "no-store" in issued["Cache-Control"]
        key = ApiKey.objects.get()
        assert key.key_hash == hash_key(raw) and raw not in (key.prefix, key.key_hash, key.name)
        # Shown once: the list, the change page and the API never show it again.
        for later in ("/admin/inference/apikey/", f"/admin/inference/apikey/{key.pk}/change/"):
            assert raw not in client.get(later).content.decode()
        used = Client().get("/v1/models", HTTP_AUTHORIZATION=f"Bearer {raw}")
        assert used.status_code == 200 and raw not in used.content.decode()
        Client().get("/v1/models", HTTP_AUTHORIZATION=f"Bearer {raw}x")  # a wrong key is logged? never its text
    assert raw not in caplog.text
