"""The six-stage equilibrium model's id becomes `eqlm-demo-anytime`: its registry row, evaluation runs, result rows
and council bench rows move.

`eqlm-demo` now names the model promoted from the experiments (`make promote-demo`), so nothing measured on the old one
may stay under that id. As in 0005: the evaluation runs follow their registry row (a foreign key); local result rows
carry the id as the arm label and in their run id (`local:<slug>:<sha>:...`). The live council's bench rows (experiment
`local-council`) name it in their run id (`local-council:<member>+<member>:<hash>`), in their arm labels
(`eqlm-demo alone ...`) and in their conditions (`member`, `decoder`), so those are rewritten too.
"""

import json

from django.db import migrations

OLD, NEW = "eqlm-demo", "eqlm-demo-anytime"
KEPT = "eqlm-demo-successor"  # where a reverse puts the model that held `eqlm-demo` since
COUNCIL = "local-council"


def _condition_key(condition: dict | None) -> str:
    """benchmarks_app.records.condition_key as it is at this migration."""
    if not condition:
        return ""
    return json.dumps(condition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _label(text: str, old: str, new: str) -> str:
    """A council label that names the member first (`eqlm-demo alone · held-out KJV alone`), with its id moved."""
    return new + text[len(old) :] if text == old or text.startswith(f"{old} ") else text


def _move_registry_and_local(apps, old: str, new: str, checkpoint: str | None, onnx_dir: str | None) -> None:
    """0005's move: the registry row (with its evaluation runs), the local runs, arms and result rows."""
    RegisteredModel = apps.get_model("inference", "RegisteredModel")
    Run = apps.get_model("benchmarks_app", "Run")
    Arm = apps.get_model("benchmarks_app", "Arm")
    ResultRow = apps.get_model("benchmarks_app", "ResultRow")

    row = RegisteredModel.objects.filter(slug=old).first()
    if row is not None and not RegisteredModel.objects.filter(slug=new).exists():
        row.slug = new
        if checkpoint is not None:
            row.checkpoint_path, row.onnx_dir = checkpoint, onnx_dir
        row.save(update_fields=["slug", "checkpoint_path", "onnx_dir"])

    prefix, new_prefix = f"local:{old}:", f"local:{new}:"
    for run in Run.objects.filter(experiment="local", run_id__startswith=prefix):
        target = new_prefix + run.run_id[len(prefix) :]
        if not Run.objects.filter(run_id=target).exists():
            run.run_id = target
            run.save(update_fields=["run_id"])
    for arm in Arm.objects.filter(run__experiment="local", label=old):
        if not Arm.objects.filter(run=arm.run, label=new).exists():
            arm.label = new
            arm.save(update_fields=["label"])
    ResultRow.objects.filter(experiment="local", arm_label=old, arm__label=new).update(arm_label=new)


def _move_council(apps, old: str, new: str) -> None:
    """The council bench's runs, arms and rows that name `old` as a member."""
    Run = apps.get_model("benchmarks_app", "Run")
    Arm = apps.get_model("benchmarks_app", "Arm")
    ResultRow = apps.get_model("benchmarks_app", "ResultRow")

    for run in Run.objects.filter(experiment=COUNCIL, run_id__contains=old):
        head, sep, rest = run.run_id.partition(":")
        members, sep2, tail = rest.partition(":")
        names = members.split("+")
        if not sep or old not in names:
            continue
        target = head + sep + "+".join(new if m == old else m for m in names) + sep2 + tail
        if not Run.objects.filter(run_id=target).exists():
            run.run_id = target
            run.save(update_fields=["run_id"])
    for arm in Arm.objects.filter(run__experiment=COUNCIL, label__startswith=old):
        label = _label(arm.label, old, new)
        if label != arm.label and not Arm.objects.filter(run=arm.run, label=label).exists():
            arm.label = label
            arm.save(update_fields=["label"])
    for row in ResultRow.objects.filter(experiment=COUNCIL).select_related("arm"):
        condition = dict(row.condition or {})
        if condition.get("member") == old:
            condition["member"] = new
        if isinstance(condition.get("decoder"), str):
            condition["decoder"] = _label(condition["decoder"], old, new)
        key = _condition_key(condition)
        if row.arm_label == row.arm.label and key == row.condition_key:
            continue
        taken = ResultRow.objects.filter(arm=row.arm, metric=row.metric, condition_key=key, step=row.step)
        if key != row.condition_key and taken.exclude(pk=row.pk).exists():
            continue  # a row measured under the target id already: keep both apart rather than merge
        row.arm_label, row.condition, row.condition_key = row.arm.label, condition, key
        row.save(update_fields=["arm_label", "condition", "condition_key"])


def forwards(apps, schema_editor):
    _move_registry_and_local(apps, OLD, NEW, f"inference/demo/{NEW}.pt", f"static/models/{NEW}")
    _move_council(apps, OLD, NEW)


def backwards(apps, schema_editor):
    """The six-stage model gets its old id back; the model that held that id since, with its evaluation runs, result
    rows and council rows, moves aside to KEPT rather than being deleted (a reverse loses no measurement)."""
    _move_registry_and_local(apps, OLD, KEPT, None, None)
    _move_council(apps, OLD, KEPT)
    _move_registry_and_local(apps, NEW, OLD, f"inference/demo/{OLD}.pt", f"static/models/{OLD}")
    _move_council(apps, NEW, OLD)


class Migration(migrations.Migration):
    dependencies = [
        ("inference", "0007_evaluationrun_task_id"),
        ("benchmarks_app", "0007_comparison_kind_head_to_head"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
