"""`manage.py seed` loads the findings fixture idempotently; `load_findings --refresh` overwrites."""

import io
from collections import Counter

import pytest
from django.core.management import call_command
from django.utils.text import slugify

from findings_app.models import Figure, Finding, FindingLink, RecordNote, Reference
from findings_app.seed import seed
from findings_app.services import import_findings

pytestmark = pytest.mark.django_db


def test_seed_loads_the_whole_record(fixture_data):
    seed()
    assert Finding.objects.count() == len(fixture_data["findings"]) == 57
    assert Figure.objects.count() == sum(len(entry["figures"]) for entry in fixture_data["findings"])
    assert RecordNote.objects.count() == len(fixture_data["notes"])
    assert Reference.objects.filter(kind="experiment").exists() and FindingLink.objects.exists()


def test_seeding_twice_changes_nothing(fixture_data):
    seed()
    before = (Finding.objects.count(), Figure.objects.count(), Reference.objects.count(), FindingLink.objects.count())
    summary = seed()
    after = (Finding.objects.count(), Figure.objects.count(), Reference.objects.count(), FindingLink.objects.count())
    assert before == after
    assert "0 findings loaded, 57 already present" in summary


def test_an_edit_made_in_the_admin_survives_a_seed(fixture_data):
    seed()
    Finding.objects.filter(code="F1").update(title="Edited title")
    seed()
    assert Finding.objects.get(code="F1").title == "Edited title"


def test_refresh_restores_the_fixture_over_edits(fixture_data):
    seed()
    Finding.objects.filter(code="F1").update(title="Edited title")
    Figure.objects.filter(finding__code="F1").delete()
    call_command("load_findings", "--refresh", stdout=io.StringIO())
    f1 = Finding.objects.get(code="F1")
    assert f1.title == fixture_data["findings"][0]["title"]
    assert f1.figures.count() == len(fixture_data["findings"][0]["figures"])


def test_a_missing_finding_is_added_back_by_seed(fixture_data):
    import_findings(fixture_data)
    Finding.objects.filter(code="F24").delete()
    seed()
    f24 = Finding.objects.get(code="F24")
    assert f24.links.filter(kind="corrected_by", target__code="F44").exists()
    assert f24.notes.exists()


def test_figure_names_and_anchors_are_unique_within_each_finding(fixture_data):
    for entry in fixture_data["findings"]:
        names = [figure["name"] for figure in entry["figures"]]
        anchors = [slugify(name) for name in names]
        assert len(set(names)) == len(names), entry["code"]
        assert not [a for a, n in Counter(anchors).items() if n > 1 or not a], entry["code"]


def test_every_link_in_the_fixture_points_at_a_finding_in_it(fixture_data):
    codes = {entry["code"] for entry in fixture_data["findings"]}
    for entry in fixture_data["findings"]:
        for targets in entry.get("links", {}).values():
            assert set(targets) <= codes, entry["code"]


def test_every_note_quotes_only_figures_that_exist(fixture_data):
    from findings_app.rendering import FIGURE_REF

    figures = {(e["code"], f["name"]) for e in fixture_data["findings"] for f in e["figures"]}
    for note in fixture_data["notes"]:
        for code, name in FIGURE_REF.findall(note["body"]):
            assert (code, " ".join(name.split())) in figures, (note["slug"], code, name)
