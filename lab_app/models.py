"""Models for lab_app: a solver job (a sweep, a QRE path or an enumeration on a large game) is a row."""

from django.conf import settings
from django.db import models
from django.urls import reverse

from portal.models import Job


class LabRun(Job):
    """One lab job: the validated spec it was given, and the result JSON once done."""

    KIND_SOLVE = "solve"
    KIND_SWEEP = "sweep"
    KIND_CHOICES = [(KIND_SOLVE, "Single solve"), (KIND_SWEEP, "Parameter sweep")]

    kind = models.CharField(max_length=16, choices=KIND_CHOICES, default=KIND_SOLVE)
    solver = models.CharField(max_length=16, db_index=True)
    game_name = models.CharField(max_length=100, blank=True)
    spec = models.JSONField(help_text="The normalised request: game, solver, params and the optional sweep.")
    result = models.JSONField(null=True, blank=True)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"Lab run #{self.pk} ({self.solver}, {self.game_name}, {self.status})"

    def get_absolute_url(self) -> str:
        return reverse("lab:job", args=[self.pk])
