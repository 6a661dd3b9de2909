"""The row store moved from benchmarks_app to results without touching a row: the same tables, the same content
types (so the permissions given on them), and the old admin addresses lead to the new ones."""

import pytest
from django.contrib.auth.models import Permission
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from results.models import ResultRow, Run
from results.records import ingest_records

BEFORE = [
    ("benchmarks_app", "0008_f45_interval_is_a_normal_interval"),
    ("inference", "0008_demo_model_becomes_anytime"),
    ("contenttypes", "0002_remove_content_type_name"),
    ("auth", "0012_alter_user_first_name_max_length"),
]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def migrate_to_latest():
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.fixture
def back_to_latest_afterwards():
    yield
    migrate_to_latest()


@pytest.mark.django_db(transaction=True)
def test_rows_and_permissions_stored_under_benchmarks_app_are_the_results_apps_after_the_move(
    back_to_latest_afterwards,
):
    MigrationExecutor(connection).migrate([("results", None)])  # back to before the results app existed
    apps = migrate(BEFORE)
    content_type = apps.get_model("contenttypes", "ContentType")
    permission = apps.get_model("auth", "Permission")
    old_row = apps.get_model("benchmarks_app", "ResultRow")
    rows_type, _ = content_type.objects.get_or_create(app_label="benchmarks_app", model="resultrow")
    permission.objects.get_or_create(
        content_type=rows_type, codename="change_resultrow", defaults={"name": "Can change"}
    )
    run = apps.get_model("benchmarks_app", "Run").objects.create(run_id="old/run", experiment="old")
    arm = apps.get_model("benchmarks_app", "Arm").objects.create(run=run, label="A1")
    old_row.objects.create(arm=arm, experiment="old", arm_label="A1", metric="m", value=0.5)

    migrate_to_latest()

    assert list(ResultRow.objects.values_list("experiment", "arm_label", "value")) == [("old", "A1", 0.5)]
    assert Run.objects.get().run_id == "old/run"
    moved = Permission.objects.get(codename="change_resultrow")
    assert (moved.content_type.app_label, moved.content_type.model) == ("results", "resultrow")
    assert moved.content_type_id == rows_type.pk


@pytest.mark.django_db
def test_the_rows_keep_their_tables():
    tables = {model._meta.db_table for model in (ResultRow, Run)}
    assert tables == {"benchmarks_app_resultrow", "benchmarks_app_run"}
    assert (
        ingest_records([{"run": "r", "experiment": "e", "arm": "A", "metric": "m", "value": 1.0}], source_name="t") == 1
    )
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM benchmarks_app_resultrow")
        assert cursor.fetchone() == (1,)


@pytest.mark.django_db
def test_an_old_admin_address_of_a_row_store_model_leads_to_its_new_one(admin_client):
    response = admin_client.get("/admin/benchmarks_app/resultrow/?experiment=exp10")
    assert response.status_code == 308
    assert response["Location"] == "/admin/results/resultrow/?experiment=exp10"
    assert admin_client.get(response["Location"]).status_code == 200
    assert admin_client.get("/admin/benchmarks_app/comparison/").status_code == 200  # still benchmarks_app's
