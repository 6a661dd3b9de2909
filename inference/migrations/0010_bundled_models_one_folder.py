"""Each bundled model's files moved into one folder `models/<id>/`: the stored paths of its registry row follow.

Before: the checkpoint `inference/demo/<id>.pt` and the export `static/models/<id>/`. After: `models/<id>/checkpoint.pt`
and `models/<id>/onnx`. Only rows naming those places change (uploaded models keep their paths); reversible.
"""

from django.db import migrations

OLD_CHECKPOINT, OLD_ONNX = "inference/demo/", "static/models/"


def _new_checkpoint(path: str) -> str:
    name = path[len(OLD_CHECKPOINT) :]
    if path.startswith(OLD_CHECKPOINT) and name.endswith(".pt") and "/" not in name:
        return f"models/{name[: -len('.pt')]}/checkpoint.pt"
    return path


def _new_onnx(path: str) -> str:
    model_id = path[len(OLD_ONNX) :].rstrip("/")
    if path.startswith(OLD_ONNX) and model_id and "/" not in model_id:
        return f"models/{model_id}/onnx"
    return path


def _old_checkpoint(path: str) -> str:
    parts = path.split("/")
    if len(parts) == 3 and parts[0] == "models" and parts[2] == "checkpoint.pt":
        return f"{OLD_CHECKPOINT}{parts[1]}.pt"
    return path


def _old_onnx(path: str) -> str:
    parts = path.rstrip("/").split("/")
    if len(parts) == 3 and parts[0] == "models" and parts[2] == "onnx":
        return f"{OLD_ONNX}{parts[1]}"
    return path


def _rewrite(apps, checkpoint, onnx) -> None:
    RegisteredModel = apps.get_model("inference", "RegisteredModel")
    for row in RegisteredModel.objects.all():
        paths = checkpoint(row.checkpoint_path), onnx(row.onnx_dir)
        if paths != (row.checkpoint_path, row.onnx_dir):
            row.checkpoint_path, row.onnx_dir = paths
            row.save(update_fields=["checkpoint_path", "onnx_dir"])


def forwards(apps, schema_editor):
    _rewrite(apps, _new_checkpoint, _new_onnx)


def backwards(apps, schema_editor):
    _rewrite(apps, _old_checkpoint, _old_onnx)


class Migration(migrations.Migration):
    dependencies = [("inference", "0009_modelimport")]

    operations = [migrations.RunPython(forwards, backwards)]
