"""The model registry: registered (bundled and uploaded) models, their evaluation runs and their import jobs.

The tables keep the names they had in the inference app (Meta.db_table), where these models were first defined.
"""

import secrets
from pathlib import Path

from django.conf import settings
from django.db import models

from eqlm.model_files import current_path
from portal.models import Job


class RegisteredModelQuerySet(models.QuerySet):
    def demo(self):
        return self.filter(kind=RegisteredModel.Kind.DEMO)

    def uploaded(self):
        return self.filter(kind=RegisteredModel.Kind.UPLOADED)


def checkpoint_upload_path(instance, filename: str) -> str:
    """A generated name under models/: the client's file name is never used on disk."""
    return f"models/checkpoints/{secrets.token_hex(12)}.pt"


def model_folder_name(sha256: str) -> str:
    """An uploaded or imported model's folder under MEDIA_ROOT, named by its checkpoint's sha256 (never by a client
    name): checkpoint.pt, card.md, facts.json, metrics.json and onnx/, the layout of a bundled model's folder."""
    return f"models/{sha256}"


class RegisteredModel(models.Model):
    """A checkpoint this deployment can evaluate: the local demo model or one uploaded by staff."""

    class Kind(models.TextChoices):
        DEMO = "demo", "Local demo model"
        UPLOADED = "uploaded", "Uploaded checkpoint"

    slug = models.SlugField(max_length=80, unique=True)
    name = models.CharField(max_length=120)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.UPLOADED, db_index=True)
    model_class = models.CharField(max_length=20)
    checkpoint = models.FileField(upload_to=checkpoint_upload_path, blank=True)
    checkpoint_path = models.CharField(max_length=300, blank=True, help_text="a file in the repository (demo model)")
    onnx_dir = models.CharField(
        max_length=300,
        blank=True,
        help_text="a folder with its ONNX export (manifest.json and the graphs it names); empty = not served",
    )
    sha256 = models.CharField(max_length=64, db_index=True)
    size_bytes = models.BigIntegerField(default=0)
    num_params = models.BigIntegerField(null=True, blank=True)
    config = models.JSONField(default=dict, blank=True)
    provenance = models.JSONField(default=dict, blank=True)
    metrics = models.JSONField(default=dict, blank=True)
    notes = models.TextField(blank=True)
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = RegisteredModelQuerySet.as_manager()

    class Meta:
        db_table = "inference_registeredmodel"
        ordering = ["kind", "-created_at"]

    def __str__(self) -> str:
        return self.name

    def file_path(self) -> Path:
        if self.checkpoint:
            return Path(self.checkpoint.path)
        return current_path(self.checkpoint_path, Path(settings.BASE_DIR))  # an old row may name a moved file


class ModelImport(Job):
    """The worker's half of registering a checkpoint: its ONNX export, facts and card, written into its folder."""

    model = models.ForeignKey(RegisteredModel, on_delete=models.CASCADE, related_name="imports")
    facts = models.JSONField(default=dict, blank=True)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        db_table = "inference_modelimport"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"Import of {self.model} ({self.status})"


class EvaluationRun(Job):
    """An evaluation of a registered model on the gpu queue: BLiMP by depth, or quality and convergence by depth."""

    class Kind(models.TextChoices):
        BLIMP = "blimp", "BLiMP by depth"
        CONVERGENCE = "convergence", "Quality and convergence by depth"

    model = models.ForeignKey(RegisteredModel, on_delete=models.CASCADE, related_name="evaluations")
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.BLIMP, db_index=True)
    options = models.JSONField(
        default=dict, blank=True, help_text="convergence: solvers, max_depth, tolerances, cap, windows, text"
    )
    depths = models.JSONField(default=list)
    paradigms = models.JSONField(default=list, blank=True, help_text="empty = every paradigm in BLIMP_DIR")
    pair_limit = models.PositiveIntegerField(null=True, blank=True, help_text="first N pairs of each paradigm")
    blimp_dir = models.CharField(max_length=300, blank=True, help_text="empty = the BLIMP_DIR setting")
    device = models.CharField(max_length=20, blank=True)
    results = models.JSONField(default=dict, blank=True)
    rows_written = models.IntegerField(default=0)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        db_table = "inference_evaluationrun"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        if self.kind == self.Kind.CONVERGENCE:
            return f"Quality and convergence of {self.model} ({self.status})"
        return f"BLiMP of {self.model} at depths {self.depths} ({self.status})"
