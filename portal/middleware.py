"""Project middleware: security headers (CSP and friends) and a plain 503 when the database is down."""

from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse

DEFAULT_CSP = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self' 'unsafe-inline'",
    "img-src": "'self' data: blob:",
    "font-src": "'self' data:",
    "connect-src": "'self'",
    "worker-src": "'self' blob:",
    "object-src": "'none'",
    "base-uri": "'self'",
    "form-action": "'self'",
    "frame-ancestors": "'none'",
}


def csp_header(extra: dict[str, str] | None = None) -> str:
    policy = dict(DEFAULT_CSP)
    for directive, sources in (extra or {}).items():
        policy[directive] = (policy.get(directive, "") + " " + sources).strip()
    return "; ".join(f"{key} {value}" for key, value in policy.items())


class SecurityHeadersMiddleware:
    """Adds the Content Security Policy; a view may widen it with `response.csp_extra = {...}`.

    Pages that need cross-origin isolation (the in-browser depth dial) set `response.cross_origin_isolated`.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = csp_header(getattr(response, "csp_extra", None))
        if getattr(response, "cross_origin_isolated", False):
            response["Cross-Origin-Opener-Policy"] = "same-origin"
            response["Cross-Origin-Embedder-Policy"] = "require-corp"
        response.setdefault("Cross-Origin-Resource-Policy", "same-origin")
        response.setdefault("Permissions-Policy", "camera=(), microphone=(), geolocation=()")
        return response


class DatabaseUnavailableMiddleware:
    """A lost database becomes a plain 503, a full or read-only media disk a 507/503, instead of a traceback."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        from .celery import QueueUnavailable
        from .storage import StorageUnavailable

        if isinstance(exception, StorageUnavailable):
            return storage_unavailable_response(request, exception)
        if isinstance(exception, QueueUnavailable):
            return plain_503(request, str(exception), "queue_unavailable")
        if not isinstance(exception, (OperationalError, InterfaceError)) and type(exception) is not DatabaseError:
            return None
        message = "The database is unavailable right now. Please try again in a minute."
        if request.path.startswith(("/api/", "/v1/")):
            from .api import error_body

            response = JsonResponse(error_body(message, 503, code="database_unavailable"), status=503)
        else:
            response = HttpResponse(message, status=503, content_type="text/plain; charset=utf-8")
        response["Retry-After"] = "30"
        return response


def plain_503(request, message: str, code: str) -> HttpResponse:
    if request.path.startswith(("/api/", "/v1/")):
        from .api import error_body

        response = JsonResponse(error_body(message, 503, code=code), status=503)
    else:
        response = HttpResponse(message, status=503, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = "60"
    return response


def storage_unavailable_response(request, exception) -> HttpResponse:
    """The upload could not be stored; the transaction around it rolled back and the partial file was removed."""
    status = 507 if exception.full else 503
    message = f"The upload could not be stored: {exception.reason}. Nothing was saved; please try again later."
    if request.path.startswith(("/api/", "/v1/")):
        from .api import error_body

        response = JsonResponse(error_body(message, status, code="storage_unavailable"), status=status)
    else:
        response = HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")
    response["Retry-After"] = "300"
    return response
