"""The council summary is cached under the record's revision, and any change to the record is seen at once."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from council_app.models import Accuracy, CouncilRecord, FairBaseline, Seed

pytestmark = pytest.mark.django_db


def council_page(client) -> tuple[str, int]:
    with CaptureQueriesContext(connection) as queries:
        html = client.get("/council/").content.decode()
    return html, len(queries)


def test_a_second_view_of_the_page_reuses_the_summary(client, council):
    _, first = council_page(client)
    _, second = council_page(client)
    assert first > 30
    assert second <= 3


def test_an_admin_edit_after_the_page_was_cached_shows_at_once(staff_client, council):
    council_page(staff_client)
    arm = FairBaseline.objects.get(key="self_consistency_k5")
    arm.accuracy = 0.6400
    arm.save()  # what the admin's change form does
    html, _ = council_page(staff_client)
    assert 'data-figure="sc5-accuracy">0.6400<' in html


def test_deleting_a_seed_after_the_page_was_cached_changes_the_page(client, council):
    before, _ = council_page(client)
    assert "seed 47" in before
    Seed.objects.filter(seed=47).delete()
    after, _ = council_page(client)
    assert "seed 47" not in after


def test_an_edit_made_by_another_process_is_seen_through_the_revision_in_the_database(client, council):
    council_page(client)
    # Another process saves a row: its signal writes a new revision; here only the database changes.
    Accuracy.objects.filter(seed__seed=46, domain="all", rule__key="majority").update(value=0.9999)
    html, _ = council_page(client)
    assert "0.9999" not in html  # nothing told this process yet
    CouncilRecord.objects.update(revision="written-by-another-process")
    html, _ = council_page(client)
    assert "0.9999" in html


def test_reloading_the_fixture_gives_the_record_a_new_revision(council, council_data):
    from council_app import seed

    Seed.objects.filter(seed=46).delete()
    revision = CouncilRecord.objects.get().revision
    seed.load(council_data)
    assert CouncilRecord.objects.get().revision != revision
