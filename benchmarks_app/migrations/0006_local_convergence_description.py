"""The local-convergence table's description: depth 1-128, the AA score and the depth-curve targets, where a
database still holds the old text (the stable and converged verdicts); an admin's own edit is kept."""

from django.db import migrations

OLD = (
    "Every registered model the quality-and-convergence evaluation has measured (experiment 'local', arm "
    "= the model's id): held-out bits/byte, the median and 95th-percentile relative residual ||f(z) - z|| "
    "/ ||z|| and the share of positions below 0.01, by depth from a cold start, for Picard and Anderson; "
    "and adaptive halting at several tolerances (cap 64) against fixed depth at the same mean depth. The "
    "same stored rows feed the depth dial's convergence charts; the notes say whether each model is "
    "stable (every depth from 12 to 64 within 0.02 bits/byte of the best) and converged (at least 95% of "
    "positions below 0.01 at depth 32)."
)
NEW = (
    "Every registered model the quality-and-convergence evaluation has measured (experiment 'local', arm "
    "= the model's id): held-out bits/byte, the median and 95th-percentile relative residual ||f(z) - z|| "
    "/ ||z|| and the share of positions below 0.01, by depth 1-128 from a cold start (past the models' "
    "serving cap of 64, on purpose), for Picard and Anderson; adaptive halting at several tolerances (cap "
    "64) against fixed depth at the same mean depth; and Picard from N(0, 1) and warm starts, with the AA "
    "score (the mean cosine between their final states and the zero start's, Anil et al. 2022) and the "
    "greedy agreement at the deepest depth. The same stored rows feed the depth dial's convergence "
    "charts. The notes judge each model by the depth-curve experiment's criterion (its targets: "
    "from the best depth to 128 never more than 0.01 bits/byte above the best; depth 12 within 0.03 of "
    "the best; the best at most 2.18; depth 4 at most 2.35; AA cosine and greedy agreement with N(0, 1) "
    "at least 0.99; warm greedy agreement at least 99%), on the model's one evaluation; the bundled "
    "models' rows are on 24 held-out windows of 256 bytes (the experiment reads 48)."
)


def forward(apps, schema_editor):
    Comparison = apps.get_model("benchmarks_app", "Comparison")
    Comparison.objects.filter(slug="local-convergence", description=OLD).update(description=NEW)


def backward(apps, schema_editor):
    Comparison = apps.get_model("benchmarks_app", "Comparison")
    Comparison.objects.filter(slug="local-convergence", description=NEW).update(description=OLD)


class Migration(migrations.Migration):
    dependencies = [("benchmarks_app", "0005_comparison_kind_convergence")]

    operations = [migrations.RunPython(forward, backward)]
