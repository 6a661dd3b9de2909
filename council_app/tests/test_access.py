"""Who may do what: anyone reads every council page; only the admin edits the record."""

import pytest

from council_app.models import FairBaseline

pytestmark = pytest.mark.django_db

PAGES = [
    "/council/",
    "/council/replay/",
    "/council/replay/?seed=47&q=3",
    "/council/tables/seeds.csv",
    "/api/council/",
    "/api/council/questions/?seed=45",
]


@pytest.mark.parametrize("persona", ["client", "member_client", "staff_client"])
def test_everyone_reads_every_council_page_and_no_page_takes_a_write(request, council, persona):
    http = request.getfixturevalue(persona)
    for url in PAGES:
        assert http.get(url).status_code == 200, url
    for url in ["/council/", "/council/replay/", "/council/tables/seeds.csv"]:
        assert http.post(url, {"accuracy": "1"}).status_code == 405, url


def test_anonymous_and_members_cannot_open_the_council_admin(client, member_client, council):
    for http in (client, member_client):
        response = http.get("/admin/council_app/fairbaseline/")
        assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_staff_edit_the_record_in_the_admin_and_the_page_follows(staff_client, council):
    arm = FairBaseline.objects.get(key="self_consistency_k5")
    assert staff_client.get("/admin/council_app/fairbaseline/").status_code == 200
    assert staff_client.get("/admin/council_app/samplequestion/").status_code == 200
    assert staff_client.get(f"/admin/council_app/fairbaseline/{arm.pk}/change/").status_code == 200
    form = {
        "key": arm.key,
        "label": arm.label,
        "order": arm.order,
        "accuracy": "0.6400",
        "generations_per_request": arm.generations_per_request,
        "council_wins": arm.council_wins,
        "council_losses": arm.council_losses,
        "z": arm.z,
    }
    response = staff_client.post(f"/admin/council_app/fairbaseline/{arm.pk}/change/", form)
    assert response.status_code == 302
    assert 'data-figure="sc5-accuracy">0.6400<' in staff_client.get("/council/").content.decode()
