"""Admin of the inference app: API keys for /v1/ (inference/v1/admin.py); the model registry's is models_app's."""

from .v1 import admin as v1_admin  # noqa: F401 - registers ApiKeyAdmin
