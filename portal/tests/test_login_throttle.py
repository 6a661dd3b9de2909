"""The admin sign-in refuses an address after repeated failures, and a success clears the count."""

import pytest
from django.core.cache import cache

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _clean_cache():
    cache.clear()
    yield
    cache.clear()


def attempt(client, password):
    return client.post("/admin/login/", {"username": "staff", "password": password, "next": "/admin/"})


def test_repeated_failed_admin_logins_are_throttled(client, staff_user, settings):
    settings.LOGIN_FAILURE_LIMIT = 3
    for _ in range(3):
        assert attempt(client, "wrong").status_code == 200  # the form again, with an error
    refused = attempt(client, "staff-pass-123")
    assert refused.status_code == 429
    assert refused["Retry-After"]
    assert b"Too many failed sign-in attempts" in refused.content


def test_a_successful_login_clears_earlier_failures(client, staff_user, settings):
    settings.LOGIN_FAILURE_LIMIT = 3
    attempt(client, "wrong")
    attempt(client, "wrong")
    assert attempt(client, "staff-pass-123").status_code == 302
    client.logout()
    attempt(client, "wrong")
    attempt(client, "wrong")
    assert attempt(client, "staff-pass-123").status_code == 302


def test_anonymous_visitor_is_sent_to_the_admin_login(client):
    response = client.get("/admin/")
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]
