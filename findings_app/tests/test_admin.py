"""The admin as the record's editor: access for each persona, inlines, and the live Markdown preview."""

import pytest
from django.contrib.auth.models import Permission

from .factories import make_figure, make_finding

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/findings_app/finding/"
PREVIEW = "/admin/findings_app/finding/preview/"


@pytest.fixture
def f45():
    finding = make_finding("F45", title="Same-width tied block")
    make_figure(finding, "mean ratio", "0.9582")
    return finding


def test_anonymous_visitors_are_sent_to_the_admin_login(client, f45):
    for path in [CHANGELIST, f"{CHANGELIST}{f45.pk}/change/"]:
        response = client.get(path)
        assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_members_without_staff_rights_are_sent_to_the_admin_login(member_client, f45):
    response = member_client.get(CHANGELIST)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_staff_see_the_findings_with_filters_and_search(staff_client, f45):
    response = staff_client.get(CHANGELIST + "?q=tied")
    html = response.content.decode()
    assert response.status_code == 200
    assert "Same-width tied block" in html
    assert "By status" in html and "By theme" in html


def test_the_change_page_has_figure_link_and_provenance_inlines_and_the_preview_script(staff_client, f45):
    html = staff_client.get(f"{CHANGELIST}{f45.pk}/change/").content.decode()
    assert 'id="figures-group"' in html and 'id="links-group"' in html and 'id="references-group"' in html
    assert "0.9582" in html
    assert '<script src="/static/js/findings-admin.js" type="module">' in html


def test_staff_can_edit_a_finding_and_the_permalink_shows_the_edit(staff_client, client, f45):
    page = staff_client.get(f"{CHANGELIST}{f45.pk}/change/")
    form = page.context["adminform"].form
    data = {name: form[name].value() or "" for name in form.fields}
    data.update(title="Edited in the admin", date="2026-08-29")
    for prefix in ["figures", "links", "references"]:
        data.update({f"{prefix}-TOTAL_FORMS": "0", f"{prefix}-INITIAL_FORMS": "0"})
    data.update({"figures-TOTAL_FORMS": "1", "figures-INITIAL_FORMS": "1"})
    figure = f45.figures.get()
    data.update(
        {
            "figures-0-id": figure.pk,
            "figures-0-finding": f45.pk,
            "figures-0-name": figure.name,
            "figures-0-value": figure.value,
            "figures-0-context": "",
            "figures-0-position": 0,
        }
    )
    response = staff_client.post(f"{CHANGELIST}{f45.pk}/change/", data)
    assert response.status_code == 302, response.context["adminform"].form.errors if response.context else ""
    assert "Edited in the admin" in client.get("/findings/F45/").content.decode()


def test_the_preview_renders_sanitised_markdown_for_staff(staff_client):
    response = staff_client.post(PREVIEW, {"text": "**bold** F24 <script>alert(1)</script>"})
    html = response.json()["html"]
    assert "<strong>bold</strong>" in html and 'href="/findings/F24/"' in html
    assert "<script" not in html


def test_the_preview_only_answers_post(staff_client):
    assert staff_client.get(PREVIEW).status_code == 405


def test_the_preview_is_closed_to_anonymous_visitors_and_members(client, member_client):
    assert client.post(PREVIEW, {"text": "x"}).status_code == 302
    assert member_client.post(PREVIEW, {"text": "x"}).status_code == 302


def test_the_preview_is_refused_to_staff_who_may_not_edit_findings(client, django_user_model):
    clerk = django_user_model.objects.create_user("clerk", "clerk@example.org", "clerk-pass-123", is_staff=True)
    clerk.user_permissions.set(Permission.objects.filter(codename="view_finding"))
    client.force_login(clerk)
    assert client.post(PREVIEW, {"text": "x"}).status_code == 403


def test_the_preview_checks_csrf(staff_user):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(staff_user)
    assert strict.post(PREVIEW, {"text": "x"}).status_code == 403


def test_record_notes_have_a_preview_too(staff_client):
    response = staff_client.post("/admin/findings_app/recordnote/preview/", {"text": "*note*"})
    assert response.json()["html"] == "<p><em>note</em></p>"
