"""Bearer API keys for /v1/: who is calling (a key, or an anonymous client address) and whether that is allowed."""

from dataclasses import dataclass

from django.conf import settings
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication

from inference.models import ApiKey
from portal.api import ApiError


@dataclass(frozen=True)
class Caller:
    """The party a request is counted against: a key (its own limits) or an anonymous address (the anonymous limits)."""

    identity: str
    requests_per_minute: int
    tokens_per_minute: int
    key: ApiKey | None = None


def bearer_token(request) -> str | None:
    header = request.META.get("HTTP_AUTHORIZATION", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def client_address(request) -> str:
    if settings.SECURE_PROXY_SSL_HEADER:  # behind a trusted proxy: its first forwarded address is the client
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")[0].strip()
        if forwarded:
            return forwarded
    return request.META.get("REMOTE_ADDR", "unknown")


def identify_caller(request) -> Caller:
    """The caller of a /v1/ request; raises a 401 ApiError when a key is required and none valid was presented.

    When keys are not required (the embedded default), an unknown key is treated as anonymous so that clients
    which must send *some* key (the official openai client) work out of the box.
    """
    raw = bearer_token(request)
    key = ApiKey.objects.lookup(raw) if raw else None
    if key is not None:
        now = timezone.now()
        if key.last_used_at is None or (now - key.last_used_at).total_seconds() > 60:
            ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        return Caller(f"key:{key.pk}", key.requests_per_minute, key.tokens_per_minute, key)
    if settings.API_REQUIRE_KEY:
        if raw:
            raise ApiError("Incorrect API key provided.", status_code=401, code="invalid_api_key")
        raise ApiError(
            "You didn't provide an API key. Send it as 'Authorization: Bearer <key>'.",
            status_code=401,
            code="missing_api_key",
        )
    return Caller(
        f"ip:{client_address(request)}",
        settings.API_ANON_REQUESTS_PER_MINUTE,
        settings.API_ANON_TOKENS_PER_MINUTE,
    )


class ApiKeyAuthentication(BaseAuthentication):
    """DRF authentication for /v1/: sets request.auth to the Caller (request.user stays anonymous)."""

    def authenticate(self, request):
        from django.contrib.auth.models import AnonymousUser

        return AnonymousUser(), identify_caller(request._request)

    def authenticate_header(self, request):
        return 'Bearer realm="eqlm"'


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "inference.v1.keys.ApiKeyAuthentication"
    name = "ApiKeyBearer"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key created in the admin (eqlm-…). Required when API_REQUIRE_KEY is on.",
        }
