"""The model registry (RegisteredModel, EvaluationRun, ModelImport) moves to models_app.

State only: the tables stay where they are, under their names (models_app's models set db_table to them), and
models_app's first migration takes them over. Reversible (the state comes back; the database was never touched).
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("inference", "0010_bundled_models_one_folder")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name="EvaluationRun"),
                migrations.DeleteModel(name="ModelImport"),
                migrations.DeleteModel(name="RegisteredModel"),
            ],
            database_operations=[],
        )
    ]
