"""Invalidate cached tables when rows are deleted or edited outside the ingest service."""

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from .models import ResultRow
from .records import invalidate_tables


@receiver(post_delete, sender=ResultRow)
@receiver(post_save, sender=ResultRow)  # an edit in the admin (ingest inserts rows in bulk and bumps once)
def _rows_changed(sender, **kwargs):
    invalidate_tables()
