"""The row store: result rows and their provenance (the files they came from, runs, arms).

Every app writes rows through results.records and every table reads them here. The tables keep the names
they had in benchmarks_app, where these models began (db_table), so moving them copied no data.
"""

from django.conf import settings
from django.db import models
from django.db.models import Avg, Count, Q

from portal.models import Job


class SourceFile(Job):
    """One uploaded (or imported) result file and its ingest job."""

    file = models.FileField(upload_to="benchmarks/uploads/%Y/%m/", blank=True)
    companion = models.FileField(upload_to="benchmarks/uploads/%Y/%m/", blank=True, help_text="sibling config.yaml")
    sha256 = models.CharField(max_length=64, db_index=True)
    original_name = models.CharField(max_length=255, blank=True)
    path_hint = models.CharField(max_length=255, blank=True)
    requested_format = models.CharField(max_length=32, blank=True)
    detected_format = models.CharField(max_length=32, blank=True)
    size_bytes = models.BigIntegerField(default=0)
    uploader = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    rows_created = models.IntegerField(default=0)
    rows_seen = models.IntegerField(default=0)
    duplicate_of = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    errors = models.JSONField(default=list, blank=True, help_text="[{pointer|line, message}]")
    summary = models.CharField(max_length=300, blank=True)

    class Meta:
        db_table = "benchmarks_app_sourcefile"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"#{self.pk} {self.path_hint or self.original_name}"


def names_for(code: str, stored: list[str]) -> list[str]:
    """The stored experiment names that the programme's name `code` names: itself, and each that extends it with
    `_…` (exp10 -> exp10_5090); results.experiment_names resolves names with it."""
    code = (code or "").strip()
    return [name for name in stored if name == code or name.startswith(code + "_")] if code else []


class RunQuerySet(models.QuerySet):
    def matching(self, experiment: str = "", arm: str = "", seed: int | None = None, metric: str = ""):
        """Runs with that experiment, an arm of that label, that seed and rows of that metric (each optional)."""
        qs = self
        if experiment:
            qs = qs.filter(experiment__in=names_for(experiment, self.experiment_names()) or [experiment])
        if arm:
            qs = qs.filter(arms__label=arm)
        if seed is not None:
            qs = qs.filter(seed=seed)
        if metric:
            qs = qs.filter(arms__rows__metric=metric)
        return qs.distinct().prefetch_related("arms")

    def experiment_names(self) -> list[str]:
        return list(self.order_by("experiment").values_list("experiment", flat=True).distinct())


class Run(models.Model):
    """A training/evaluation run, identified by its path in the programme's results folder."""

    run_id = models.CharField(max_length=200, unique=True)
    experiment = models.CharField(max_length=100, db_index=True)
    seed = models.IntegerField(null=True, blank=True, db_index=True)
    seed_inferred = models.BooleanField(default=False, help_text="seed taken from the path, not the file")
    config_hash = models.CharField(max_length=128, blank=True)
    git_commit = models.CharField(max_length=64, blank=True)
    hardware = models.CharField(max_length=100, blank=True)
    config = models.JSONField(default=dict, blank=True)
    notes = models.TextField(blank=True)
    source_file = models.ForeignKey(SourceFile, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs")
    created_at = models.DateTimeField(auto_now_add=True)

    objects = RunQuerySet.as_manager()

    class Meta:
        db_table = "benchmarks_app_run"
        ordering = ["experiment", "seed", "run_id"]

    def __str__(self) -> str:
        return self.run_id


class ArmQuerySet(models.QuerySet):
    def labels(self) -> list[str]:
        return list(self.order_by("label").values_list("label", flat=True).distinct())


class Arm(models.Model):
    """One arm (model variant) trained inside a run."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="arms")
    label = models.CharField(max_length=100)
    model_family = models.CharField(max_length=50, blank=True)
    model_name = models.CharField(max_length=200, blank=True)
    num_params = models.BigIntegerField(null=True, blank=True)
    recipe = models.JSONField(default=dict, blank=True)

    objects = ArmQuerySet.as_manager()

    class Meta:
        db_table = "benchmarks_app_arm"
        ordering = ["run", "label"]
        constraints = [models.UniqueConstraint(fields=["run", "label"], name="bench_arm_unique_label")]

    def __str__(self) -> str:
        return f"{self.run.run_id}:{self.label}"


class ResultRowQuerySet(models.QuerySet):
    def for_side(self, experiment: str, arm: str, metric: str, condition_key: str = "", step=None):
        qs = self.filter(experiment=experiment, arm_label=arm, metric=metric, condition_key=condition_key)
        return qs.filter(step__isnull=True) if step is None else qs.filter(step=step)

    def per_seed_means(self) -> dict[int, float]:
        """{seed: mean value} computed in SQL (GROUP BY seed); rows without a seed are left out."""
        rows = self.exclude(seed__isnull=True).values("seed").annotate(v=Avg("value")).order_by("seed")
        return {r["seed"]: r["v"] for r in rows}

    def picker_choices(self) -> dict[str, list[str]]:
        """Distinct experiment:arm pairs with end-of-run seeded rows, their metrics, and every metric (pickers)."""
        final = self.filter(step__isnull=True)
        sides = (
            final.filter(seed__isnull=False).order_by("experiment", "arm_label").values_list("experiment", "arm_label")
        )
        return {
            "sides": [f"{e}:{a}" for e, a in sides.distinct()],
            "final_metrics": list(final.order_by("metric").values_list("metric", flat=True).distinct()),
            "metrics": list(self.order_by("metric").values_list("metric", flat=True).distinct()),
        }

    def local_blimp_by_depth(self, arm: str) -> dict[int, float]:
        """BLiMP accuracy by depth that the portal's own evaluations of a model wrote (experiment "local").

        Evaluations of different pair subsets may coexist; per depth the one that scored the most pairs counts.
        """
        rows = self.filter(experiment="local", metric="blimp_accuracy", arm_label=arm)
        best: dict[int, tuple[int, float]] = {}
        for condition, value, n in rows.values_list("condition", "value", "n"):
            depth = (condition or {}).get("depth")
            if isinstance(depth, int) and (depth not in best or (n or 0) > best[depth][0]):
                best[depth] = (n or 0, value)
        return {depth: value for depth, (_, value) in sorted(best.items())}

    def by_condition_and_seed(self, *, by_run: bool = False) -> list[dict]:
        """[(condition_key, arm_label[, run], seed, mean value, n rows)] in SQL, for curve tables."""
        keys = ["condition_key", "arm_label", "seed"] + (["arm__run__run_id"] if by_run else [])
        return list(self.values(*keys).annotate(v=Avg("value"), k=Count("id")).order_by(*keys))


class ResultRow(models.Model):
    """One measurement. Experiment, arm label and seed are copied from the arm/run so tables aggregate in one index."""

    arm = models.ForeignKey(Arm, on_delete=models.CASCADE, related_name="rows")
    experiment = models.CharField(max_length=100)
    arm_label = models.CharField(max_length=100)
    seed = models.IntegerField(null=True, blank=True)
    metric = models.CharField(max_length=100)
    value = models.FloatField()
    unit = models.CharField(max_length=30, blank=True)
    n = models.IntegerField(null=True, blank=True, help_text="items evaluated (e.g. BLiMP pairs)")
    step = models.IntegerField(null=True, blank=True, help_text="training step; empty = end of run")
    condition = models.JSONField(default=dict, blank=True)
    condition_key = models.CharField(max_length=255, blank=True, help_text="canonical JSON of the condition")
    source_file = models.ForeignKey(SourceFile, null=True, blank=True, on_delete=models.SET_NULL, related_name="rows")
    source_pointer = models.CharField(max_length=255, blank=True, help_text="JSON pointer or line in the source")

    objects = ResultRowQuerySet.as_manager()

    class Meta:
        db_table = "benchmarks_app_resultrow"
        ordering = ["experiment", "arm_label", "metric", "seed", "step"]
        constraints = [
            models.UniqueConstraint(
                fields=["arm", "metric", "condition_key", "step"],
                condition=Q(step__isnull=False),
                name="bench_row_unique_step",
            ),
            models.UniqueConstraint(
                fields=["arm", "metric", "condition_key"],
                condition=Q(step__isnull=True),
                name="bench_row_unique_final",
            ),
        ]
        indexes = [
            models.Index(
                fields=["experiment", "arm_label", "metric", "condition_key", "step", "seed", "value"],
                name="bench_row_lookup",
            ),
            models.Index(fields=["metric", "experiment"], name="bench_row_metric"),
        ]

    def __str__(self) -> str:
        return f"{self.experiment}:{self.arm_label} s{self.seed} {self.metric}={self.value}"
