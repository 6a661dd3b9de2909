"""Admin registrations for the inference app (API keys in admin_keys.py, the model registry in admin_registry.py)."""

from . import (
    admin_keys,  # noqa: F401 - registers ApiKeyAdmin
    admin_registry,  # noqa: F401 - registers the model registry and evaluation runs
)
