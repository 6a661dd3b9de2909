"""Source files, runs, arms and result rows now belong to the results app (results/migrations/0001): state only,
their tables stay where they are. After inference's data migrations that still read them here."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("benchmarks_app", "0008_f45_interval_is_a_normal_interval"),
        ("results", "0001_initial"),
        ("inference", "0008_demo_model_becomes_anytime"),  # reads Run, Arm and ResultRow under benchmarks_app
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(
                    model_name="resultrow",
                    name="arm",
                ),
                migrations.RemoveField(
                    model_name="resultrow",
                    name="source_file",
                ),
                migrations.RemoveField(
                    model_name="run",
                    name="source_file",
                ),
                migrations.RemoveField(
                    model_name="sourcefile",
                    name="duplicate_of",
                ),
                migrations.RemoveField(
                    model_name="sourcefile",
                    name="uploader",
                ),
                migrations.DeleteModel(
                    name="Arm",
                ),
                migrations.DeleteModel(
                    name="ResultRow",
                ),
                migrations.DeleteModel(
                    name="Run",
                ),
                migrations.DeleteModel(
                    name="SourceFile",
                ),
            ],
        ),
    ]
