"""Model ids: the first demo model is `eqlm-demo-unrolled`, and nothing measured on it stays under `eqlm-demo`."""

import json
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [
    ("inference", "0004_registeredmodel_onnx_dir"),
    ("benchmarks_app", "0002_sourcefile_requeue_count_requeued_at"),
]
AFTER = [("inference", "0005_demo_model_becomes_unrolled")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def historical_models(targets):
    """Migrate to `targets`; the registry, evaluation and result-row models as they were there."""
    apps = migrate(targets)
    names = ("inference.RegisteredModel", "inference.EvaluationRun", "benchmarks_app.Run", "benchmarks_app.Arm")
    return tuple(apps.get_model(name) for name in (*names, "benchmarks_app.ResultRow"))


def migrate_to_latest():
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.fixture
def back_to_latest_afterwards():
    yield
    migrate_to_latest()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("back_to_latest_afterwards")
def test_the_data_migration_moves_the_old_models_row_evaluations_and_result_rows_to_the_unrolled_id():
    RegisteredModel, EvaluationRun, Run, Arm, ResultRow = historical_models(BEFORE)
    old = RegisteredModel.objects.create(
        slug="eqlm-demo",
        name="EqLM demo (KJV, byte-level)",
        kind="demo",
        model_class="EqLM",
        sha256="ab" * 32,
        checkpoint_path="inference/demo/eqlm-demo.pt",
    )
    evaluation = EvaluationRun.objects.create(model=old, depths=[4, 8])
    run = Run.objects.create(run_id=f"local:eqlm-demo:{'ab' * 6}:blimp-all-first50", experiment="local")
    arm = Arm.objects.create(run=run, label="eqlm-demo", model_name="EqLM demo (KJV, byte-level)")
    ResultRow.objects.create(arm=arm, experiment="local", arm_label="eqlm-demo", metric="blimp_accuracy", value=0.6)
    other_run = Run.objects.create(run_id="local:someone-else:x:blimp", experiment="local")
    other = Arm.objects.create(run=other_run, label="someone-else")
    ResultRow.objects.create(
        arm=other, experiment="local", arm_label="someone-else", metric="blimp_accuracy", value=0.5
    )

    migrate(AFTER)
    migrate_to_latest()  # later migrations may add columns the current models read

    from benchmarks_app.models import ResultRow as Row
    from inference.models import EvaluationRun as Evaluation
    from inference.models import RegisteredModel as Model

    assert list(Model.objects.values_list("slug", flat=True)) == ["eqlm-demo-unrolled"]
    moved = Model.objects.get()
    assert moved.pk == old.pk and "unrolled" in moved.name
    assert moved.checkpoint_path == "inference/demo/eqlm-demo-unrolled.pt"
    assert moved.onnx_dir == "static/models/eqlm-demo-unrolled"
    assert Evaluation.objects.get(pk=evaluation.pk).model_id == moved.pk
    labels = dict(Row.objects.values_list("arm_label", "arm__run__run_id"))
    assert labels == {
        "eqlm-demo-unrolled": f"local:eqlm-demo-unrolled:{'ab' * 6}:blimp-all-first50",
        "someone-else": "local:someone-else:x:blimp",
    }
    assert not Row.objects.filter(arm_label="eqlm-demo").exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("back_to_latest_afterwards")
def test_reversing_the_move_keeps_the_equilibrium_models_row_and_rows_under_an_archive_id():
    RegisteredModel, EvaluationRun, Run, Arm, ResultRow = historical_models(AFTER)
    RegisteredModel.objects.all().delete()
    fields = {"kind": "demo", "model_class": "EqLM", "sha256": "cd" * 32}
    unrolled = RegisteredModel.objects.create(
        slug="eqlm-demo-unrolled", name="EqLM demo, unrolled-trained (KJV, byte-level)", **fields
    )
    equilibrium = RegisteredModel.objects.create(
        slug="eqlm-demo", name="EqLM demo", checkpoint_path="inference/demo/eqlm-demo.pt", **fields
    )
    evaluation = EvaluationRun.objects.create(model=equilibrium, depths=[4, 8])
    for slug in ("eqlm-demo", "eqlm-demo-unrolled"):
        run = Run.objects.create(run_id=f"local:{slug}:{'cd' * 6}:convergence", experiment="local")
        arm = Arm.objects.create(run=run, label=slug)
        ResultRow.objects.create(arm=arm, experiment="local", arm_label=slug, metric="bits_per_byte", value=2.3)

    RegisteredModel, EvaluationRun, _, _, ResultRow = historical_models(BEFORE)

    slugs = dict(RegisteredModel.objects.values_list("pk", "slug"))
    assert slugs == {unrolled.pk: "eqlm-demo", equilibrium.pk: "eqlm-demo-equilibrium"}
    assert EvaluationRun.objects.get(pk=evaluation.pk).model_id == equilibrium.pk
    kept = RegisteredModel.objects.get(pk=equilibrium.pk)
    assert kept.checkpoint_path == "inference/demo/eqlm-demo.pt"
    assert dict(ResultRow.objects.values_list("arm_label", "arm__run__run_id")) == {
        "eqlm-demo": f"local:eqlm-demo:{'cd' * 6}:convergence",
        "eqlm-demo-equilibrium": f"local:eqlm-demo-equilibrium:{'cd' * 6}:convergence",
    }


def test_the_unrolled_models_files_are_committed_under_its_id_and_say_so():
    onnx = Path(settings.MODELS_DIR) / "eqlm-demo-unrolled"
    manifest = json.loads((onnx / "manifest.json").read_text())
    assert manifest["model_id"] == "eqlm-demo-unrolled" and manifest["max_depth"] == 64
    demo = Path(settings.BASE_DIR) / "inference" / "demo"
    metrics = json.loads((demo / "eqlm-demo-unrolled.metrics.json").read_text())
    assert metrics["model_id"] == "eqlm-demo-unrolled"
    assert (
        metrics["checkpoint_sha256"]
        == __import__("hashlib").sha256((demo / "eqlm-demo-unrolled.pt").read_bytes()).hexdigest()
    )
    measured = json.loads((demo / "eqlm-demo-unrolled.facts.json").read_text())["evaluation"]["by_depth"]
    whole = measured["rows"][0]["values"]  # the whole held-out slice, exported up to depth 12
    assert measured["depths"] == [4, 8, 12, 16, 24, 32, 48, 64]
    assert min(v for v in whole if v is not None) == whole[1] == 2.1835  # the peak at depth 8 the card describes


def test_every_committed_model_file_fits_in_10_mb_together():
    root = Path(settings.BASE_DIR)
    files = [p for folder in ("static/models", "inference/demo") for p in (root / folder).rglob("*") if p.is_file()]
    files = [p for p in files if p.suffix in (".onnx", ".pt")]
    assert files and sum(p.stat().st_size for p in files) < 10 * 1024 * 1024
