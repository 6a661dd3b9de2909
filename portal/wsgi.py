"""WSGI entry point (gunicorn portal.wsgi); each worker loads the demo model before it takes its first request."""

import logging
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
application = get_wsgi_application()


def warm_up() -> None:
    """Load the ONNX demo model now (about 0.5 s), so the first /v1 or depth-dial user does not wait for it."""
    from django.conf import settings

    if not settings.WARM_UP_MODEL:
        return
    from inference.serving import get_generator

    try:
        get_generator()
    except Exception as exc:  # noqa: BLE001 - the API answers 503 model_unavailable itself; pages go on
        logging.getLogger("portal").warning("demo model not loaded at start-up: %s", exc)


warm_up()
