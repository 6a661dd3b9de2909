"""F45's published "95% interval" is checked as the normal-approximation interval that reproduces it, not against
the bootstrap (a three-seed range), where a database still holds the old declaration; an admin's edit is kept."""

from django.db import migrations

OLD_NOTE = (
    "The record does not say how this interval was computed; the bootstrap over the stored seeds is their min–max."
)


def forward(apps, schema_editor):
    from benchmarks_app.declared import F45_INTERVAL_NOTE

    Comparison = apps.get_model("benchmarks_app", "Comparison")
    for comparison in Comparison.objects.filter(slug="f45-equal-compute"):
        changed = False
        for entry in comparison.published or []:
            if entry.get("label") == "95% interval" and entry.get("stat") == "ci" and entry.get("note") == OLD_NOTE:
                entry["stat"], entry["note"] = "ci_normal", F45_INTERVAL_NOTE
                changed = True
        if changed:
            comparison.save(update_fields=["published"])


class Migration(migrations.Migration):
    dependencies = [("benchmarks_app", "0007_comparison_kind_head_to_head")]
    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]
