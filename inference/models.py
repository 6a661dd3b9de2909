"""Models for the inference app: API keys for the OpenAI-compatible API (/v1/)."""

import hashlib
import secrets

from django.db import models
from django.utils import timezone

KEY_PREFIX = "eqlm-"


def hash_key(raw_key: str) -> str:
    return hashlib.sha256(raw_key.encode("utf-8")).hexdigest()


class ApiKeyQuerySet(models.QuerySet):
    def active(self):
        return self.filter(revoked_at__isnull=True)

    def lookup(self, raw_key: str):
        """The active key matching a presented secret, or None (compared by hash; raw keys are never stored)."""
        return self.active().filter(key_hash=hash_key(raw_key)).first()


class ApiKey(models.Model):
    """A Bearer key for /v1/. Only its SHA-256 hash and a short display prefix are stored."""

    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, editable=False, db_index=True)
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    requests_per_minute = models.PositiveIntegerField(default=60)
    tokens_per_minute = models.PositiveIntegerField(default=20000)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        verbose_name = "API key"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @classmethod
    def issue(cls, name: str, **limits) -> tuple["ApiKey", str]:
        """Create a key; returns (row, raw secret). The raw secret is shown once and never stored."""
        raw = KEY_PREFIX + secrets.token_urlsafe(32)
        key = cls.objects.create(name=name, prefix=raw[:12], key_hash=hash_key(raw), **limits)
        return key, raw

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    def revoke(self) -> None:
        self.revoked_at = timezone.now()
        self.save(update_fields=["revoked_at"])
