"""Project middleware: security headers, 503s for lost services, request input checks, the API error shape and the
glossary links of reader pages."""

import codecs
from urllib.parse import parse_qsl

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse
from django.urls import reverse
from rest_framework.views import APIView

from .glossary import link_main
from .unicode import STRICT_UTF8, json_escape_problem, text_problem

INT64_MAX = 2**63 - 1

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


# --- request input: one size limit for JSON bodies, and text that is valid Unicode -------------------------------

API_PREFIXES = ("/api/", "/v1/")


class BadInput(Exception):
    """Input refused before any view runs: a status, a message and where in the request it was."""

    def __init__(self, status: int, message: str, param: str, code: str):
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code


def check_query_numbers(query: str) -> None:
    """An integer beyond 64 bits in a query string (`?seed=10**400`) is refused: no database can compare it."""
    for name, value in parse_qsl(query, keep_blank_values=True):
        digits = value.strip().lstrip("+-")
        if len(digits) > 18 and digits.isdigit() and (len(digits) > 19 or int(digits) > INT64_MAX):
            raise BadInput(400, f"{name} is beyond the range of a 64-bit integer.", name, "number_out_of_range")


def view_body_limit(view_func) -> int | None:
    """A view's own body limit: `max_body_bytes` on a DRF view class or on a plain view function."""
    view_class = getattr(view_func, "cls", None) or getattr(view_func, "view_class", None)
    return getattr(view_class, "max_body_bytes", None) or getattr(view_func, "max_body_bytes", None)


def check_request_input(request, view_func) -> None:
    """Raise BadInput for a query string or body that no view should see (size, invalid Unicode)."""
    raw_query = request.META.get("QUERY_STRING", "")
    try:
        query_bytes = raw_query.encode("iso-8859-1")  # WSGI carries the raw bytes as latin-1 text
    except UnicodeEncodeError:
        query_bytes = raw_query.encode("utf-8", "surrogatepass")
    problem = text_problem(query_bytes, percent_encoded=True) if query_bytes else None
    if problem:
        raise BadInput(400, f"The query string {problem}.", "query", "invalid_encoding")
    if query_bytes:
        check_query_numbers(query_bytes.decode("utf-8"))
    if request.method in ("GET", "HEAD", "OPTIONS", "DELETE"):
        return
    content_type = request.META.get("CONTENT_TYPE", "").split(";")[0].strip().lower()
    if content_type == "multipart/form-data":
        # uploads keep their own limit (UPLOAD_MAX_BYTES) and their files are checked row by row on ingest; the
        # fields are parsed later, by the view, so they get a strict decoding instead of a check here
        if codecs.lookup(request.encoding or settings.DEFAULT_CHARSET).name == "utf-8":  # not a declared charset
            request.encoding = STRICT_UTF8
        return
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        raise BadInput(400, "Content-Length is not a number.", "body", "invalid_request")
    is_api = is_api_request(request)
    limit = view_body_limit(view_func) or (settings.API_MAX_BODY_BYTES if is_api else None)
    if limit and length > limit:
        raise BadInput(
            413, f"The request body is {length} bytes; this endpoint accepts at most {limit}.", "body", "body_too_large"
        )
    if length == 0 or length > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
        return  # Django refuses bodies over DATA_UPLOAD_MAX_MEMORY_SIZE itself (400)
    body = request.body
    urlencoded = content_type == "application/x-www-form-urlencoded"
    problem = text_problem(body, percent_encoded=False) or (urlencoded and text_problem(body, percent_encoded=True))
    problem = problem or json_escape_problem(body.decode("utf-8"))
    if problem:
        raise BadInput(400, f"The request body {problem}.", "body", "invalid_encoding")


def is_api_request(request, view_func=None) -> bool:
    """An API request answers in the error shape: under /api/ or /v1/, or served by any DRF view."""
    if view_func is not None:
        view_class = getattr(view_func, "cls", None)
        request.served_by_api_view = view_class is not None and issubclass(view_class, APIView)
    return getattr(request, "served_by_api_view", False) or request.path.startswith(API_PREFIXES)


def bad_input_response(request, exc: BadInput) -> HttpResponse:
    if is_api_request(request):
        from .api import error_body

        return JsonResponse(error_body(exc.message, exc.status, exc.param, exc.code), status=exc.status)
    return HttpResponse(exc.message, status=exc.status, content_type="text/plain; charset=utf-8")


class RequestInputMiddleware:
    """Refuses, before any view runs or anything is written, input that no view should have to handle.

    - every API body (JSON, whatever its Content-Type) over `API_MAX_BODY_BYTES`, or the view's own
      `max_body_bytes`: 413 without reading it (multipart uploads keep `UPLOAD_MAX_BYTES`);
    - a query string, form body or JSON body that is not valid UTF-8, or whose JSON holds a lone surrogate
      escape (`\\ud800`) or a NUL (`\\u0000`, `%00`; PostgreSQL cannot store either): 400.
    API paths answer in the error shape, pages in plain text.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        is_api_request(request, view_func)
        try:
            check_request_input(request, view_func)
        except BadInput as exc:
            return bad_input_response(request, exc)
        return None


class ApiErrorShapeMiddleware:
    """Every error under /api/ and /v1/ in the error shape, even Django's own pages (DEBUG's 404, a 405)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (
            response.status_code < 400
            or not is_api_request(request)
            or getattr(response, "streaming", False)
            or response.get("Content-Type", "").startswith("application/json")
        ):
            return response
        from .api import error_body

        status = response.status_code
        if status == 404:
            message, code = f"No API endpoint at {request.path}.", "not_found"
        else:
            message, code = f"{status} {response.reason_phrase}.", None
        shaped = JsonResponse(error_body(message, status, code=code), status=status)
        for header in ("Allow", "Retry-After"):
            if header in response:
                shaped[header] = response[header]
        return shaped


class GlossaryLinksMiddleware:
    """On every reader page, the first use in its main content of each glossary term links to its definition on
    /glossary/ (portal.glossary.link_main: never inside links, code, headings, form controls or attributes). The
    glossary itself and the staff admin are left as they are."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (
            response.status_code != 200
            or getattr(response, "streaming", False)
            or not response.get("Content-Type", "").startswith("text/html")
        ):
            return response
        glossary = reverse("glossary")
        if request.path == glossary or request.path.startswith("/admin/"):
            return response
        charset = response.charset
        response.content = link_main(response.content.decode(charset), glossary).encode(charset)
        return response
