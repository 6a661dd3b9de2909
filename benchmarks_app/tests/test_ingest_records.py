"""`ingest_records`: the generic long format other apps write through; transactional and idempotent."""

import pytest
from django.core.management import call_command

from benchmarks_app import tables
from benchmarks_app.models import Comparison
from benchmarks_app.parsers import IngestError
from results.models import ResultRow, Run, SourceFile
from results.records import ingest_records

from .factories import paired_rows, record

pytestmark = pytest.mark.django_db


def test_ingest_records_returns_the_rows_created_and_is_idempotent():
    records = [record(step=s, metric="train_loss", value=5.0 - s / 100) for s in (0, 100, 200)] + [record()]
    assert ingest_records(records, source_name="unit") == 4
    assert ingest_records(records, source_name="unit") == 0
    assert ResultRow.objects.count() == 4 and SourceFile.objects.count() == 1


def test_rows_carry_provenance_of_run_and_source():
    ingest_records([record(config_hash="cafe", git_commit="beef", model_name="M", num_params=10)], source_name="u")
    row = ResultRow.objects.select_related("arm__run", "source_file").get()
    assert (row.arm.run.config_hash, row.arm.run.git_commit, row.arm.num_params) == ("cafe", "beef", 10)
    assert row.source_file.original_name == "u"


def test_one_bad_record_stores_nothing_and_names_it():
    with pytest.raises(IngestError) as info:
        ingest_records([record(), record(run="x/2", value="high")], source_name="unit")
    assert info.value.errors[0]["record"] == 1 and "value" in info.value.errors[0]["message"]
    assert not ResultRow.objects.exists() and not Run.objects.exists()


@pytest.mark.parametrize(
    "bad",
    [
        {"value": float("nan")},
        {"value": float("inf")},
        {"value": 1e300},
        {"value": True},
        {"seed": "42"},
        {"step": -1},
        {"condition": {"depth": [1, 2]}},
        {"condition": "depth=4"},
        {"run": ""},
        {"metric": "m" * 101},
    ],
)
def test_invalid_fields_are_refused(bad):
    with pytest.raises(IngestError):
        ingest_records([record(**bad)], source_name="unit")
    assert not ResultRow.objects.exists()


def test_the_same_measurement_under_another_condition_is_a_new_row():
    assert ingest_records([record(condition={"depth": 4}), record(condition={"depth": 8})], source_name="u") == 2


def test_compare_pairs_by_seed_and_reports_unpaired_seeds():
    paired_rows({1: 0.5, 2: 0.6, 3: 0.7}, {1: 1.0, 2: 1.0})
    result = tables.compare(("exp99", "T"), ("exp99", "B"), "blimp_accuracy")
    assert result["ratio"]["n"] == 2 and result["ratio"]["mean"] == pytest.approx(0.55)
    assert result["unpaired"]["missing_in_baseline"] == [3]


def test_ingest_invalidates_cached_tables():
    Comparison.objects.create(slug="t", title="T", treatment_experiment="exp99", treatment_arm="T",
                              baseline_experiment="exp99", baseline_arm="B")  # fmt: skip
    comparison = Comparison.objects.get(slug="t")
    assert tables.build_table(comparison)["empty"] is True
    paired_rows({1: 0.5}, {1: 1.0})
    table = tables.build_table(comparison)
    assert table["empty"] is False and table["result"]["ratio"]["mean"] == 0.5


def test_a_row_edited_or_deleted_in_the_admin_changes_the_cached_table():
    Comparison.objects.create(slug="t", title="T", treatment_experiment="exp99", treatment_arm="T",
                              baseline_experiment="exp99", baseline_arm="B")  # fmt: skip
    comparison = Comparison.objects.get(slug="t")
    paired_rows({1: 0.5, 2: 0.6}, {1: 1.0, 2: 1.0})
    assert tables.build_table(comparison)["result"]["ratio"]["mean"] == pytest.approx(0.55)
    row = ResultRow.objects.get(arm_label="T", seed=1)
    row.value = 0.7
    row.save()  # what the admin's change form does
    assert tables.build_table(comparison)["result"]["ratio"]["mean"] == pytest.approx(0.65)
    ResultRow.objects.get(arm_label="T", seed=2).delete()
    assert tables.build_table(comparison)["result"]["ratio"]["n"] == 1


def test_import_results_command_ingests_a_folder_file_with_its_config(shared_dir, capsys):
    path = shared_dir / "anchor-results/exp05_full_v4_s43/results.json"
    call_command("import_results", str(path))
    run = Run.objects.get(run_id="exp05_full_v4_s43")
    assert run.seed == 43 and run.seed_inferred is False and "config_yaml" in run.config
    call_command("import_results", str(path))
    assert "nothing new" in capsys.readouterr().out
