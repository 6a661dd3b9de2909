"""The model registry's models, taken over from the inference app: state only.

The tables were created by inference's migrations and keep their names (db_table); inference's 0011 removed the
models from its state, and this migration adds them to models_app's, so no table is created, dropped or copied.
The content types follow (inference.registeredmodel -> models_app.registeredmodel, ...), so permissions granted on
them and the admin's history stay attached. Reversible.
"""

import django.db.models.deletion
import models_app.models
from django.conf import settings
from django.db import migrations, models

MOVED = ("registeredmodel", "evaluationrun", "modelimport")


def _relabel(apps, old: str, new: str) -> None:
    """Move the content types of the moved models from app label `old` to `new`, unless `new` has them already."""
    ContentType = apps.get_model("contenttypes", "ContentType")
    taken = set(ContentType.objects.filter(app_label=new, model__in=MOVED).values_list("model", flat=True))
    ContentType.objects.filter(app_label=old, model__in=set(MOVED) - taken).update(app_label=new)


def forwards(apps, schema_editor):
    _relabel(apps, "inference", "models_app")


def backwards(apps, schema_editor):
    _relabel(apps, "models_app", "inference")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("inference", "0011_registry_moves_to_models_app"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="RegisteredModel",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("slug", models.SlugField(max_length=80, unique=True)),
                        ("name", models.CharField(max_length=120)),
                        (
                            "kind",
                            models.CharField(
                                choices=[("demo", "Local demo model"), ("uploaded", "Uploaded checkpoint")],
                                db_index=True,
                                default="uploaded",
                                max_length=16,
                            ),
                        ),
                        ("model_class", models.CharField(max_length=20)),
                        (
                            "checkpoint",
                            models.FileField(blank=True, upload_to=models_app.models.checkpoint_upload_path),
                        ),
                        (
                            "checkpoint_path",
                            models.CharField(
                                blank=True, help_text="a file in the repository (demo model)", max_length=300
                            ),
                        ),
                        (
                            "onnx_dir",
                            models.CharField(
                                blank=True,
                                help_text="a folder with its ONNX export (manifest.json and the graphs it names); empty = not served",
                                max_length=300,
                            ),
                        ),
                        ("sha256", models.CharField(db_index=True, max_length=64)),
                        ("size_bytes", models.BigIntegerField(default=0)),
                        ("num_params", models.BigIntegerField(blank=True, null=True)),
                        ("config", models.JSONField(blank=True, default=dict)),
                        ("provenance", models.JSONField(blank=True, default=dict)),
                        ("metrics", models.JSONField(blank=True, default=dict)),
                        ("notes", models.TextField(blank=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "uploaded_by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                    ],
                    options={
                        "db_table": "inference_registeredmodel",
                        "ordering": ["kind", "-created_at"],
                    },
                ),
                migrations.CreateModel(
                    name="ModelImport",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("queued", "Queued"),
                                    ("running", "Running"),
                                    ("done", "Done"),
                                    ("failed", "Failed"),
                                ],
                                db_index=True,
                                default="queued",
                                max_length=16,
                            ),
                        ),
                        ("progress", models.FloatField(default=0.0)),
                        ("progress_message", models.CharField(blank=True, max_length=200)),
                        ("error", models.TextField(blank=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("started_at", models.DateTimeField(blank=True, null=True)),
                        ("finished_at", models.DateTimeField(blank=True, null=True)),
                        ("requeue_count", models.PositiveSmallIntegerField(default=0, editable=False)),
                        ("requeued_at", models.DateTimeField(blank=True, editable=False, null=True)),
                        ("task_id", models.CharField(blank=True, editable=False, max_length=64)),
                        ("facts", models.JSONField(blank=True, default=dict)),
                        (
                            "requested_by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "model",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="imports",
                                to="models_app.registeredmodel",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "inference_modelimport",
                        "ordering": ["-created_at"],
                    },
                ),
                migrations.CreateModel(
                    name="EvaluationRun",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("queued", "Queued"),
                                    ("running", "Running"),
                                    ("done", "Done"),
                                    ("failed", "Failed"),
                                ],
                                db_index=True,
                                default="queued",
                                max_length=16,
                            ),
                        ),
                        ("progress", models.FloatField(default=0.0)),
                        ("progress_message", models.CharField(blank=True, max_length=200)),
                        ("error", models.TextField(blank=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("started_at", models.DateTimeField(blank=True, null=True)),
                        ("finished_at", models.DateTimeField(blank=True, null=True)),
                        ("requeue_count", models.PositiveSmallIntegerField(default=0, editable=False)),
                        ("requeued_at", models.DateTimeField(blank=True, editable=False, null=True)),
                        ("task_id", models.CharField(blank=True, editable=False, max_length=64)),
                        (
                            "kind",
                            models.CharField(
                                choices=[
                                    ("blimp", "BLiMP by depth"),
                                    ("convergence", "Quality and convergence by depth"),
                                ],
                                db_index=True,
                                default="blimp",
                                max_length=20,
                            ),
                        ),
                        (
                            "options",
                            models.JSONField(
                                blank=True,
                                default=dict,
                                help_text="convergence: solvers, max_depth, tolerances, cap, windows, text",
                            ),
                        ),
                        ("depths", models.JSONField(default=list)),
                        (
                            "paradigms",
                            models.JSONField(blank=True, default=list, help_text="empty = every paradigm in BLIMP_DIR"),
                        ),
                        (
                            "pair_limit",
                            models.PositiveIntegerField(
                                blank=True, help_text="first N pairs of each paradigm", null=True
                            ),
                        ),
                        (
                            "blimp_dir",
                            models.CharField(blank=True, help_text="empty = the BLIMP_DIR setting", max_length=300),
                        ),
                        ("device", models.CharField(blank=True, max_length=20)),
                        ("results", models.JSONField(blank=True, default=dict)),
                        ("rows_written", models.IntegerField(default=0)),
                        (
                            "requested_by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "model",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="evaluations",
                                to="models_app.registeredmodel",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "inference_evaluationrun",
                        "ordering": ["-created_at"],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(forwards, backwards),
    ]
