"""The admin reads as the portal's own: its title, readable section names, a format choice and the uploads page."""

import re

import pytest

pytestmark = pytest.mark.django_db


@pytest.fixture
def superuser_client(client, django_user_model):
    user = django_user_model.objects.create_superuser("root", "root@example.org", "root-pass-123")
    client.force_login(user)
    return client


def test_the_admin_is_titled_for_the_portal_and_names_its_sections_for_people(superuser_client):
    html = superuser_client.get("/admin/").content.decode()
    assert "EqLM Portal admin" in html and "Django administration" not in html
    for name in ("Benchmarks", "Council", "Experiments", "Findings", "Models and inference", "Equilibrium lab"):
        assert f">{name}</a>" in html, name
    assert not re.search(r">[A-Z_]+_APP<", html, re.I) and "_app<" not in html


def test_the_admin_links_the_staff_uploads_page(superuser_client):
    html = superuser_client.get("/admin/").content.decode()
    assert 'href="/benchmarks/uploads/"' in html


def test_adding_an_upload_offers_the_formats_as_a_choice(superuser_client):
    html = superuser_client.get("/admin/results/sourcefile/add/").content.decode()
    select = re.search(r'<select name="requested_format"[^>]*>(.*?)</select>', html, re.S)
    assert select, "Requested format is a free text box"
    assert "Detect from the file" in select.group(1) and select.group(1).count("<option") > 3
