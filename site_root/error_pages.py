"""The portal's own 404 and 500 pages for visitors even while DEBUG is on (Django's technical ones in `make dev`)."""

import logging

from django.conf import settings
from django.core.exceptions import BadRequest, PermissionDenied, SuspiciousOperation
from django.http import Http404

from . import views

logger = logging.getLogger("django.request")


def _technical_pages() -> bool:
    """True where Django's own debug pages should answer: DEBUG on and DEBUG_TECHNICAL_PAGES set."""
    return not settings.DEBUG or settings.DEBUG_TECHNICAL_PAGES


class ErrorPagesMiddleware:
    """With DEBUG off Django already calls handler404/handler500; with DEBUG on this middleware does the same, so
    `make run` never shows a visitor the URL list or a traceback. Errors Django answers with 400 or 403 pass."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (
            _technical_pages()
            or response.status_code != 404
            or not response.get("Content-Type", "").startswith("text/html")
        ):
            return response
        if getattr(request, "resolver_match", None) is None:  # no URL matched: Django's technical 404
            return views.not_found(request)
        return response

    def process_exception(self, request, exception):
        if _technical_pages():
            return None
        if isinstance(exception, Http404):
            return views.not_found(request, exception)
        if isinstance(exception, (PermissionDenied, BadRequest, SuspiciousOperation)):
            return None
        logger.error("Internal Server Error: %s", request.path, exc_info=exception, extra={"request": request})
        return views.server_error(request)
