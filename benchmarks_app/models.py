"""The declared comparison tables: what each table compares, how, and what the programme published for it.

The rows they read live in the results app (results.models).
"""

from django.db import models


class Comparison(models.Model):
    """A declared table: what is compared with what, how, and what the programme published for it."""

    class Kind(models.TextChoices):
        RATIO = "ratio", "Paired ratio (treatment / baseline by seed)"
        CURVE = "curve", "Curve over a condition (budget, depth, tolerance)"
        ADAPTIVE = "adaptive", "Adaptive vs uniform vs explicit depth"
        AUDIT = "audit", "Compute audit"
        LADDER = "ladder", "Benchmark ladder"
        COUNCIL = "council", "Live council on mixed text (members, averaging, equilibrium, oracle)"
        CONVERGENCE = "convergence", "The portal's own models: quality and convergence by depth"
        HEAD_TO_HEAD = "head_to_head", "The programme's head-to-head claims beside the portal's own experiment"

    slug = models.SlugField(max_length=80, unique=True)
    title = models.CharField(max_length=200)
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.RATIO)
    order = models.IntegerField(default=100)
    description = models.TextField(blank=True)
    treatment_experiment = models.CharField(max_length=100, blank=True)
    treatment_arm = models.CharField(max_length=100, blank=True, help_text="blank = every arm of the experiment")
    baseline_experiment = models.CharField(max_length=100, blank=True)
    baseline_arm = models.CharField(max_length=100, blank=True)
    metric = models.CharField(max_length=100, default="blimp_accuracy")
    pairing = models.CharField(max_length=20, default="seed")
    statistic = models.JSONField(default=dict, blank=True, help_text='{"interval": "bootstrap"|"t", "resamples", ...}')
    spec = models.JSONField(default=dict, blank=True, help_text="kind-specific options (x_key, arms, tasks, ...)")
    published = models.JSONField(default=list, blank=True, help_text="[{quantity, label, value, note, known}]")
    findings = models.JSONField(default=list, blank=True, help_text='finding codes, e.g. ["F24"]')
    notes = models.TextField(blank=True)

    class Meta:
        ordering = ["order", "slug"]

    def __str__(self) -> str:
        return self.slug

    @property
    def treatment(self) -> str:
        return f"{self.treatment_experiment}:{self.treatment_arm}"

    @property
    def baseline(self) -> str:
        return f"{self.baseline_experiment}:{self.baseline_arm}"
