"""App config for inference: what uses a model, the OpenAI-compatible API (/v1/) and the depth dial (/demo/)."""

from django.apps import AppConfig


class InferenceConfig(AppConfig):
    name = "inference"
    verbose_name = "Models and inference"  # its admin section: the API keys of /v1/
