"""The JSON API's single error shape, shared by every endpoint.

Every 4xx/5xx from the API is `{"error": {"message", "type", "param", "code"}}` (the OpenAI wire
shape, so the /v1 routes and the portal's own API read alike); validation errors add `fields`.
"""

from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler

from .unicode import InvalidFormText

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    409: "conflict_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    429: "rate_limit_error",
    503: "service_unavailable",
}


class ApiError(exceptions.APIException):
    """Raise from a view or service to answer with the error shape and a named parameter."""

    def __init__(self, message: str, *, status_code: int = 400, param: str | None = None, code: str | None = None):
        super().__init__(detail=message)
        self.status_code = status_code
        self.param = param
        self.error_code = code or ("invalid_value" if status_code == 400 else None)


def error_body(message: str, status_code: int, param: str | None = None, code: str | None = None) -> dict:
    return {
        "error": {
            "message": message,
            "type": ERROR_TYPES.get(status_code, "api_error"),
            "param": param,
            "code": code,
        }
    }


def _first_message(detail) -> tuple[str | None, str]:
    """(field path, message) for the first problem inside a DRF ValidationError detail.

    Nested errors keep their path (`messages[1].role`); empty entries for valid list items are skipped.
    """
    if isinstance(detail, dict):
        for field, value in detail.items():
            if not value:
                continue
            inner_field, message = _first_message(value)
            # A ListField or DictField reports its items under their index (an int): `tokens[1]`.
            name = f"[{field}]" if isinstance(field, int) else (str(field) if field != "non_field_errors" else None)
            if inner_field and name:
                name = f"{name}{inner_field}" if inner_field.startswith("[") else f"{name}.{inner_field}"
            return (name or inner_field), message
        return None, "Invalid request."
    if isinstance(detail, list):
        for index, item in enumerate(detail):
            if not item:
                continue
            if isinstance(item, dict | list):
                inner_field, message = _first_message(item)
                inner = inner_field or ""  # `[2]` follows an index directly, a field name after a dot
                path = f"[{index}]" + (inner if not inner or inner.startswith("[") else f".{inner}")
                return path, message
            return None, str(item)
        return None, "Invalid request."
    return None, str(detail)


def api_exception_handler(exc, context):
    if isinstance(exc, RecursionError):  # json.loads on a body nested thousands deep: bad input, not a crash
        body = error_body("The JSON body is nested too deeply.", 400, "body", "nested_too_deeply")
        return Response(body, status=400)
    response = exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ParseError) and isinstance(exc.__context__, InvalidFormText):
        body = error_body(str(exc.__context__), 400, "body", "invalid_encoding")
    elif isinstance(exc, ApiError):
        body = error_body(str(exc.detail), exc.status_code, exc.param, exc.error_code)
    elif isinstance(exc, exceptions.ValidationError):
        param, message = _first_message(exc.detail)
        body = error_body(
            f"{param}: {message}" if param else message, status.HTTP_400_BAD_REQUEST, param, "invalid_value"
        )
        body["error"]["fields"] = exc.detail
    else:
        detail = exc.detail if isinstance(exc, exceptions.APIException) else str(exc)
        code = getattr(detail, "code", None)
        # A bare Http404 (an unknown ?format=, get_object_or_404) has no text of its own: use DRF's ("Not found.").
        message = str(detail) or str((response.data or {}).get("detail", "")) or "Request failed."
        body = error_body(message, response.status_code, None, code)
    return Response(body, status=response.status_code, headers=dict(response.items()))
