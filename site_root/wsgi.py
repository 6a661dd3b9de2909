"""WSGI entry point (gunicorn site_root.wsgi); each worker loads every servable model before its first request."""

import logging
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
application = get_wsgi_application()


def warm_up() -> None:
    """Load every servable model's ONNX runtime now, so the first /v1 or depth-dial user does not wait for it.

    A model that is missing or fails to load is logged and left out (the API answers 503 model_unavailable for it);
    the worker starts regardless.
    """
    from django.conf import settings

    if not settings.WARM_UP_MODEL:
        return
    from models_app.serving import warm_up_all

    try:
        warm_up_all()
    except Exception as exc:  # noqa: BLE001 - never stop a worker for a model
        logging.getLogger("portal").warning("models not loaded at start-up: %s", exc)


warm_up()
