"""Admin registrations for the inference app (API keys live in admin_keys.py)."""

from . import admin_keys  # noqa: F401 - registers ApiKeyAdmin
