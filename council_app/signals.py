"""Give the council record a new revision whenever any of its rows is saved or deleted (the cached summary's key)."""

from django.db.models.signals import post_delete, post_save

from . import models
from .services import bump_revision

RECORD_MODELS = (
    models.CouncilRecord,
    models.Player,
    models.Rule,
    models.Seed,
    models.Accuracy,
    models.FairBaseline,
    models.AnchoredSeed,
    models.RouterChoice,
    models.SampleQuestion,
    models.RuleOutcome,
    models.PlayerOutcome,
)


def record_changed(sender, instance, raw=False, **kwargs):
    if not raw:  # loaddata: the loader bumps once at the end
        bump_revision()


def connect() -> None:
    for model in RECORD_MODELS:
        post_save.connect(record_changed, sender=model, dispatch_uid=f"council-revision-save-{model.__name__}")
        post_delete.connect(record_changed, sender=model, dispatch_uid=f"council-revision-delete-{model.__name__}")
