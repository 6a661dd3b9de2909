"""Model ids: the first demo model is `eqlm-demo-unrolled`, the six-stage one `eqlm-demo-anytime`, and nothing
measured on either stays under `eqlm-demo`."""

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
BEFORE_ANYTIME = [
    ("inference", "0007_evaluationrun_task_id"),
    ("benchmarks_app", "0007_comparison_kind_head_to_head"),
]
AFTER_ANYTIME = [("inference", "0008_demo_model_becomes_anytime")]
COUNCIL_RUN = "local-council:{}+eqlm-code:37feb30255658a9c"


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

    from models_app.models import EvaluationRun as Evaluation
    from models_app.models import RegisteredModel as Model
    from results.models import ResultRow as Row

    assert list(Model.objects.values_list("slug", flat=True)) == ["eqlm-demo-unrolled"]
    moved = Model.objects.get()
    assert moved.pk == old.pk and "unrolled" in moved.name
    assert moved.checkpoint_path == "models/eqlm-demo-unrolled/checkpoint.pt"  # 0010: one folder per model
    assert moved.onnx_dir == "models/eqlm-demo-unrolled/onnx"
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


def council_rows(Run, Arm, ResultRow, member: str) -> None:
    """The bench's shape: a run naming its members, `<member> alone` arms, rows naming the member in the condition."""
    run = Run.objects.create(run_id=COUNCIL_RUN.format(member), experiment="local-council")
    for label, condition in (
        (f"{member} alone", {"domain": "mixed", "mix": "heldout-128", "decoder": f"{member} alone"}),
        (f"{member} alone · held-out KJV alone", {"domain": "kjv", "mix": "heldout-kjv"}),
        ("eqlm-code alone", {"domain": "mixed", "mix": "heldout-128", "decoder": "eqlm-code alone"}),
        ("equilibrium (defaults)", {"domain": "kjv", "member": member, "member_index": 0}),
    ):
        arm = Arm.objects.create(run=run, label=label)
        key = json.dumps(condition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        ResultRow.objects.create(
            arm=arm, experiment="local-council", arm_label=label, metric="bits_per_byte", value=2.3,
            condition=condition, condition_key=key,
        )  # fmt: skip


def council_view(ResultRow) -> set[tuple]:
    rows = ResultRow.objects.filter(experiment="local-council")
    return set(rows.values_list("arm__run__run_id", "arm_label", "condition_key"))


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("back_to_latest_afterwards")
def test_the_data_migration_moves_the_six_stage_models_rows_and_council_rows_to_the_anytime_id():
    RegisteredModel, EvaluationRun, Run, Arm, ResultRow = historical_models(BEFORE_ANYTIME)
    RegisteredModel.objects.all().delete()
    old = RegisteredModel.objects.create(
        slug="eqlm-demo",
        name="EqLM demo, equilibrium-trained (KJV, byte-level)",
        kind="demo",
        model_class="EqLM",
        sha256="53" * 32,
        checkpoint_path="inference/demo/eqlm-demo.pt",
        onnx_dir="static/models/eqlm-demo",
    )
    evaluation = EvaluationRun.objects.create(model=old, depths=[4, 8])
    for slug in ("eqlm-demo", "eqlm-demo-unrolled"):
        run = Run.objects.create(run_id=f"local:{slug}:{'53' * 6}:convergence", experiment="local")
        arm = Arm.objects.create(run=run, label=slug)
        ResultRow.objects.create(arm=arm, experiment="local", arm_label=slug, metric="bits_per_byte", value=2.3)
    council_rows(Run, Arm, ResultRow, "eqlm-demo")

    migrate(AFTER_ANYTIME)
    migrate_to_latest()

    from models_app.models import EvaluationRun as Evaluation
    from models_app.models import RegisteredModel as Model
    from results.models import ResultRow as Row

    moved = Model.objects.get()
    assert (moved.pk, moved.slug) == (old.pk, "eqlm-demo-anytime")
    assert moved.checkpoint_path == "models/eqlm-demo-anytime/checkpoint.pt"  # 0010: one folder per model
    assert moved.onnx_dir == "models/eqlm-demo-anytime/onnx"
    assert Evaluation.objects.get(pk=evaluation.pk).model_id == moved.pk
    assert dict(Row.objects.filter(experiment="local").values_list("arm_label", "arm__run__run_id")) == {
        "eqlm-demo-anytime": f"local:eqlm-demo-anytime:{'53' * 6}:convergence",
        "eqlm-demo-unrolled": f"local:eqlm-demo-unrolled:{'53' * 6}:convergence",
    }
    council = Row.objects.filter(experiment="local-council")
    assert set(council.values_list("arm__run__run_id", flat=True)) == {COUNCIL_RUN.format("eqlm-demo-anytime")}
    assert sorted(council.values_list("arm_label", flat=True)) == [
        "eqlm-code alone",
        "eqlm-demo-anytime alone",
        "eqlm-demo-anytime alone · held-out KJV alone",
        "equilibrium (defaults)",
    ]
    for row in council:
        assert row.arm_label == row.arm.label and "eqlm-demo" not in row.condition_key.replace("eqlm-demo-anytime", "")
        assert row.condition_key == json.dumps(row.condition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert council.get(arm_label="equilibrium (defaults)").condition["member"] == "eqlm-demo-anytime"
    assert not Row.objects.filter(arm_label__in=["eqlm-demo", "eqlm-demo alone"]).exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("back_to_latest_afterwards")
def test_reversing_the_anytime_move_returns_its_rows_and_keeps_the_successors_under_an_archive_id():
    RegisteredModel, EvaluationRun, Run, Arm, ResultRow = historical_models(AFTER_ANYTIME)
    RegisteredModel.objects.all().delete()
    fields = {"kind": "demo", "model_class": "EqLM", "sha256": "cd" * 32}
    anytime = RegisteredModel.objects.create(
        slug="eqlm-demo-anytime", name="EqLM demo, equilibrium-trained", **fields,
        checkpoint_path="inference/demo/eqlm-demo-anytime.pt", onnx_dir="static/models/eqlm-demo-anytime",
    )  # fmt: skip
    successor = RegisteredModel.objects.create(
        slug="eqlm-demo", name="EqLM demo", **fields,
        checkpoint_path="inference/demo/eqlm-demo.pt", onnx_dir="static/models/eqlm-demo",
    )  # fmt: skip
    evaluations = {m.pk: EvaluationRun.objects.create(model=m, depths=[4]).pk for m in (anytime, successor)}
    for slug in ("eqlm-demo", "eqlm-demo-anytime"):
        run = Run.objects.create(run_id=f"local:{slug}:{'cd' * 6}:convergence", experiment="local")
        arm = Arm.objects.create(run=run, label=slug)
        ResultRow.objects.create(arm=arm, experiment="local", arm_label=slug, metric="bits_per_byte", value=2.3)
        council_rows(Run, Arm, ResultRow, slug)
    before = council_view(ResultRow)

    RegisteredModel, EvaluationRun, _, _, ResultRow = historical_models(BEFORE_ANYTIME)

    assert dict(RegisteredModel.objects.values_list("pk", "slug")) == {
        anytime.pk: "eqlm-demo",
        successor.pk: "eqlm-demo-successor",
    }
    assert {pk: EvaluationRun.objects.get(pk=e).model_id for pk, e in evaluations.items()} == {
        anytime.pk: anytime.pk,
        successor.pk: successor.pk,
    }
    returned = RegisteredModel.objects.get(pk=anytime.pk)
    assert (returned.checkpoint_path, returned.onnx_dir) == ("inference/demo/eqlm-demo.pt", "static/models/eqlm-demo")
    assert RegisteredModel.objects.get(pk=successor.pk).checkpoint_path == "inference/demo/eqlm-demo.pt"
    assert dict(ResultRow.objects.filter(experiment="local").values_list("arm_label", "arm__run__run_id")) == {
        "eqlm-demo": f"local:eqlm-demo:{'cd' * 6}:convergence",
        "eqlm-demo-successor": f"local:eqlm-demo-successor:{'cd' * 6}:convergence",
    }
    renamed = {"eqlm-demo": "eqlm-demo-successor", "eqlm-demo-anytime": "eqlm-demo"}
    expected = set()
    for run_id, label, key in before:  # every council row is still there, each under its model's id now
        member = "eqlm-demo-anytime" if "eqlm-demo-anytime" in run_id else "eqlm-demo"

        def swap(text: str, member=member) -> str:
            return text.replace(f'"{member}', f'"{renamed[member]}').replace(f":{member}+", f":{renamed[member]}+")

        moved_label = renamed[member] + label[len(member) :] if label.startswith(f"{member} ") else label
        expected.add((swap(run_id), moved_label, swap(key)))
    assert council_view(ResultRow) == expected and len(expected) == len(before) == 8


def test_the_unrolled_models_files_are_committed_under_its_id_and_say_so():
    demo = Path(settings.MODELS_DIR) / "eqlm-demo-unrolled"
    manifest = json.loads((demo / "onnx" / "manifest.json").read_text())
    assert manifest["model_id"] == "eqlm-demo-unrolled" and manifest["max_depth"] == 64
    metrics = json.loads((demo / "metrics.json").read_text())
    assert metrics["model_id"] == "eqlm-demo-unrolled"
    assert (
        metrics["checkpoint_sha256"] == __import__("hashlib").sha256((demo / "checkpoint.pt").read_bytes()).hexdigest()
    )
    measured = json.loads((demo / "facts.json").read_text())["evaluation"]["by_depth"]
    whole = measured["rows"][0]["values"]  # the whole held-out slice, exported up to depth 12
    assert measured["depths"] == [4, 8, 12, 16, 24, 32, 48, 64]
    assert min(v for v in whole if v is not None) == whole[1] == 2.1835  # the peak at depth 8 the card describes


def test_every_committed_model_file_fits_in_10_mb_together():
    root = Path(settings.BASE_DIR)
    files = [p for folder in ("models",) for p in (root / folder).rglob("*") if p.is_file()]
    files = [p for p in files if p.suffix in (".onnx", ".pt")]
    assert files and sum(p.stat().st_size for p in files) < 10 * 1024 * 1024
