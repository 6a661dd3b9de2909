"""Invalidate cached tables when declarations are deleted or edited (results.signals does so for rows)."""

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from results.records import invalidate_tables

from .models import Comparison


@receiver(post_delete, sender=Comparison)
@receiver(post_save, sender=Comparison)
def _declarations_changed(sender, **kwargs):
    invalidate_tables()
