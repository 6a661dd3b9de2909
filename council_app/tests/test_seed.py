"""Seeding the council record: complete, idempotent, and never half-loaded."""

import copy

import pytest
from django.core.management import call_command

from council_app import seed as council_seed
from council_app.models import Accuracy, FairBaseline, PlayerOutcome, RuleOutcome, SampleQuestion, Seed


def row_counts():
    return (
        Seed.objects.count(),
        Accuracy.objects.count(),
        SampleQuestion.objects.count(),
        RuleOutcome.objects.count(),
        PlayerOutcome.objects.count(),
        FairBaseline.objects.count(),
    )


@pytest.mark.django_db
def test_seed_command_loads_the_whole_record(capsys):
    call_command("seed", "council_app")
    assert row_counts() == (3, 3 * (10 + 2 * 6), 120, 120 * 4, 120 * 4, 6)
    assert "council record" in capsys.readouterr().out


@pytest.mark.django_db
def test_reseeding_creates_nothing_and_keeps_edits(council, council_data):
    before = row_counts()
    edited = Accuracy.objects.get(seed__seed=45, domain="all", rule__key="majority")
    edited.value = 0.1234
    edited.save()
    summary = council_seed.seed()
    assert summary.startswith("council record: 0 rows created")
    assert row_counts() == before
    edited.refresh_from_db()
    assert edited.value == 0.1234


@pytest.mark.django_db
def test_a_broken_fixture_leaves_no_partial_record(council_data):
    broken = copy.deepcopy(council_data)
    broken["seeds"][1]["questions"][0]["players"] = {"Nobody/unknown-model": True}
    with pytest.raises(KeyError):
        council_seed.load(broken)
    assert row_counts() == (0, 0, 0, 0, 0, 0)


@pytest.mark.django_db
def test_a_fixture_of_another_format_is_refused(council_data):
    with pytest.raises(ValueError, match="format"):
        council_seed.load({**council_data, "format": "something-else@9"})
    assert Seed.objects.count() == 0


@pytest.mark.django_db
def test_reseeding_restores_only_what_is_missing(council):
    SampleQuestion.objects.get(seed__seed=46, index=7).delete()
    before = row_counts()
    summary = council_seed.seed()
    assert summary.startswith("council record: 9 rows created")  # the question, 4 rule and 4 player outcomes
    assert row_counts() == (before[0], before[1], before[2] + 1, before[3] + 4, before[4] + 4, before[5])
