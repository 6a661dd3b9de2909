"""API keys: stored hashed, created and revoked in the admin (secret shown once), required when configured."""

import pytest
from django.urls import reverse

from inference.models import ApiKey, hash_key

pytestmark = pytest.mark.django_db


def test_issued_key_is_stored_only_as_its_hash():
    key, raw = ApiKey.issue("reader")
    assert raw.startswith("eqlm-")
    stored = ApiKey.objects.get(pk=key.pk)
    assert stored.key_hash == hash_key(raw) and raw not in (stored.key_hash, stored.prefix)
    assert ApiKey.objects.lookup(raw) == key


def test_staff_create_a_key_in_the_admin_and_see_the_secret_once(staff_client):
    response = staff_client.post(
        reverse("admin:inference_apikey_add"),
        {"name": "lab notebook", "requests_per_minute": 10, "tokens_per_minute": 5000},
    )
    assert response.status_code == 200
    raw = response.context["raw_key"]
    assert raw.startswith("eqlm-") and raw in response.content.decode()
    assert "no-store" in response["Cache-Control"]
    key = ApiKey.objects.get(name="lab notebook")
    assert key.key_hash == hash_key(raw) and key.requests_per_minute == 10
    change_page = staff_client.get(reverse("admin:inference_apikey_change", args=[key.pk])).content.decode()
    assert raw not in change_page and key.prefix in change_page


def test_staff_revoke_keys_with_the_admin_action(staff_client):
    key, raw = ApiKey.issue("old")
    response = staff_client.post(
        reverse("admin:inference_apikey_changelist"),
        {"action": "revoke_keys", "_selected_action": [key.pk]},
        follow=True,
    )
    assert response.status_code == 200
    key.refresh_from_db()
    assert not key.is_active and ApiKey.objects.lookup(raw) is None


def test_members_cannot_reach_the_key_admin(member_client):
    response = member_client.get(reverse("admin:inference_apikey_changelist"))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_a_missing_key_is_refused_when_keys_are_required(client, settings):
    settings.API_REQUIRE_KEY = True
    response = client.get("/v1/models")
    assert response.status_code == 401
    assert response.json()["error"]["type"] == "authentication_error"
    assert response.json()["error"]["code"] == "missing_api_key"


def test_a_wrong_or_revoked_key_is_refused_when_keys_are_required(client, settings):
    settings.API_REQUIRE_KEY = True
    key, raw = ApiKey.issue("soon revoked")
    key.revoke()
    for presented in ("eqlm-not-a-real-key", raw):
        response = client.post(
            "/v1/completions",
            {"model": "eqlm-demo", "prompt": "x"},
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {presented}",
        )
        assert response.status_code == 401
        assert response.json()["error"] == {
            "message": "Incorrect API key provided.",
            "type": "authentication_error",
            "param": None,
            "code": "invalid_api_key",
        }


def test_a_valid_key_is_accepted_and_its_use_recorded(client, settings):
    settings.API_REQUIRE_KEY = True
    key, raw = ApiKey.issue("ok")
    response = client.post(
        "/v1/completions",
        {"model": "eqlm-demo", "prompt": "x", "depth": 0},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {raw}",
    )
    assert response.status_code == 400  # past authentication, stopped by validation
    key.refresh_from_db()
    assert key.last_used_at is not None
