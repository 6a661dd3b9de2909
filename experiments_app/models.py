"""Pre-registered experiments and their training runs (one job row per arm and seed)."""

from django.db import models
from django.utils import timezone

from portal.models import Job, JobStatus

# What a started experiment may no longer change (the pre-registered text and how it is judged).
FROZEN_FIELDS = ("hypothesis", "arms", "seeds", "evaluation", "criterion")
CANCELLED = "Cancelled at step {step} of {planned}: a staff member stopped this run."


class ExperimentQuerySet(models.QuerySet):
    def with_runs(self):
        return self.prefetch_related("runs")


class Experiment(models.Model):
    """What is claimed, on which arms and seeds, measured how and judged by what, recorded before any run."""

    slug = models.SlugField(max_length=80, unique=True)
    title = models.CharField(max_length=200)
    hypothesis = models.TextField(help_text="the claim in prose, as registered")
    arms = models.JSONField(default=list, help_text="[{label, recipe, stage, overrides, hash}]")
    seeds = models.JSONField(default=list, help_text="[42, 43, 44]")
    evaluation = models.JSONField(default=dict, help_text="{metrics, depths, starts, budgets, tol, text, windows}")
    criterion = models.JSONField(default=dict, help_text="the success criterion (experiments_app/criterion.py)")
    registered_at = models.DateTimeField(default=timezone.now)
    registration_hash = models.CharField(max_length=64, editable=False, help_text="sha256 of the frozen text")
    predecessor = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="successors", help_text="version of"
    )
    launched_at = models.DateTimeField(null=True, blank=True, editable=False)
    notes = models.TextField(blank=True, help_text="free notes, not part of the registration")
    summary = models.TextField(
        blank=True,
        help_text="the hypothesis reworded for readers, shown on the page: an amendment of the wording only, with its "
        "own date and sha256; the registered text stays as it was",
    )
    amended_at = models.DateTimeField(null=True, blank=True, editable=False, help_text="when `summary` was recorded")
    amendment_hash = models.CharField(
        max_length=64, blank=True, editable=False, help_text="sha256 of `summary` with the registered arms to criterion"
    )

    objects = ExperimentQuerySet.as_manager()

    class Meta:
        ordering = ["-registered_at", "slug"]

    def __str__(self) -> str:
        return self.slug

    @property
    def is_frozen(self) -> bool:
        """Launched (its runs exist): the registered fields are read-only from then on."""
        return self.launched_at is not None

    @property
    def arm_labels(self) -> list[str]:
        return [arm["label"] for arm in self.arms]


class TrainingRun(Job):
    """One arm trained with one seed, then evaluated: a chain of slices on the `train` queue, under a lease."""

    class Phase(models.TextChoices):
        TRAIN = "train", "Training"
        EVALUATE = "evaluate", "Evaluating"
        FINISHED = "finished", "Finished"

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="runs")
    arm_label = models.CharField(max_length=64)
    arm_hash = models.CharField(max_length=16)
    seed = models.IntegerField()
    phase = models.CharField(max_length=16, choices=Phase.choices, default=Phase.TRAIN)
    stage_index = models.PositiveSmallIntegerField(default=0, help_text="the stage of the arm's chain in training")
    recipe_hash = models.CharField(max_length=16, blank=True, help_text="the resolved stage's content hash")
    step = models.IntegerField(default=0)
    planned_steps = models.IntegerField(default=0)
    loss = models.FloatField(null=True, blank=True)
    train_seconds = models.FloatField(default=0.0)
    eta_seconds = models.FloatField(null=True, blank=True)
    slice_number = models.PositiveIntegerField(default=0, help_text="the slice the next message must carry")
    slices_run = models.PositiveIntegerField(default=0)
    lease_token = models.CharField(max_length=32, blank=True, editable=False)
    lease_until = models.DateTimeField(null=True, blank=True, editable=False)
    cancel_requested = models.BooleanField(default=False)
    device = models.CharField(max_length=16, blank=True)
    threads = models.PositiveSmallIntegerField(default=1)
    checkpoint = models.CharField(max_length=500, blank=True, help_text="the trained checkpoint, under MEDIA_ROOT")
    provenance = models.JSONField(default=dict, blank=True)
    rows_written = models.IntegerField(default=0)

    class Meta:
        ordering = ["experiment", "arm_label", "seed"]
        constraints = [
            models.UniqueConstraint(fields=["experiment", "arm_label", "seed"], name="experiment_run_unique_arm_seed")
        ]

    def __str__(self) -> str:
        return f"{self.experiment.slug}:{self.arm_label}:seed{self.seed}"

    @property
    def cancelled(self) -> bool:
        return self.cancel_requested and self.status == JobStatus.FAILED
