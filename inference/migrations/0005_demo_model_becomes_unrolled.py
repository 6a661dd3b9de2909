"""The first demo model's id becomes `eqlm-demo-unrolled`: its registry row, evaluation runs and result rows move.

`eqlm-demo` now names the equilibrium-trained model, so nothing measured on the old one may stay under that id.
The evaluation runs follow their registry row (a foreign key); result rows carry the id as the arm label and in
their run id (`local:<slug>:<sha>:...`), so both are rewritten.
"""

from django.db import migrations

OLD, NEW = "eqlm-demo", "eqlm-demo-unrolled"
NEW_NAME = "EqLM demo, unrolled-trained (KJV, byte-level)"
OLD_NAME = "EqLM demo (KJV, byte-level)"
KEPT, KEPT_NAME = "eqlm-demo-equilibrium", "EqLM demo, equilibrium-trained (KJV, byte-level)"


def _move(apps, old: str, new: str, new_name: str, checkpoint: str, onnx_dir: str) -> None:
    RegisteredModel = apps.get_model("inference", "RegisteredModel")
    Run = apps.get_model("benchmarks_app", "Run")
    Arm = apps.get_model("benchmarks_app", "Arm")
    ResultRow = apps.get_model("benchmarks_app", "ResultRow")

    row = RegisteredModel.objects.filter(slug=old).first()
    if row is not None and not RegisteredModel.objects.filter(slug=new).exists():
        row.slug, row.name = new, new_name
        row.checkpoint_path, row.onnx_dir = checkpoint, onnx_dir
        row.save(update_fields=["slug", "name", "checkpoint_path", "onnx_dir"])

    prefix, new_prefix = f"local:{old}:", f"local:{new}:"
    for run in Run.objects.filter(experiment="local", run_id__startswith=prefix):
        target = new_prefix + run.run_id[len(prefix) :]
        if not Run.objects.filter(run_id=target).exists():
            run.run_id = target
            run.save(update_fields=["run_id"])
    for arm in Arm.objects.filter(run__experiment="local", label=old):
        if not Arm.objects.filter(run=arm.run, label=new).exists():
            arm.label = new
            arm.model_name = new_name if arm.model_name in (OLD_NAME, NEW_NAME, "") else arm.model_name
            arm.save(update_fields=["label", "model_name"])
    ResultRow.objects.filter(experiment="local", arm_label=old, arm__label=new).update(arm_label=new)


def forwards(apps, schema_editor):
    _move(apps, OLD, NEW, NEW_NAME, "inference/demo/eqlm-demo-unrolled.pt", "static/models/eqlm-demo-unrolled")


def backwards(apps, schema_editor):
    """The unrolled model gets its old id back; the equilibrium model that held that id since, with its evaluation
    runs and result rows, moves aside to KEPT rather than being deleted (a reverse loses no measurement)."""
    RegisteredModel = apps.get_model("inference", "RegisteredModel")
    current = RegisteredModel.objects.filter(slug=OLD).first()
    if current is not None:
        _move(apps, OLD, KEPT, KEPT_NAME, current.checkpoint_path, current.onnx_dir)
    _move(apps, NEW, OLD, OLD_NAME, "inference/demo/eqlm-demo.pt", "")


class Migration(migrations.Migration):
    dependencies = [
        ("inference", "0004_registeredmodel_onnx_dir"),
        ("benchmarks_app", "0002_sourcefile_requeue_count_requeued_at"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
