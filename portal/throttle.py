"""Throttling: failed admin logins per address, and job submissions per client and per user (DRF throttles)."""

from django.conf import settings
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.core.cache import cache
from django.dispatch import receiver
from django.http import HttpResponse
from rest_framework.throttling import AnonRateThrottle, UserRateThrottle


def client_address(request) -> str:
    return request.META.get("REMOTE_ADDR", "unknown") if request is not None else "unknown"


def _key(address: str) -> str:
    return f"login-failures:{address}"


def failures(address: str) -> int:
    return cache.get(_key(address), 0)


@receiver(user_login_failed)
def count_failure(sender, credentials, request=None, **kwargs):
    key = _key(client_address(request))
    cache.add(key, 0, settings.LOGIN_FAILURE_WINDOW)
    try:
        cache.incr(key)
    except ValueError:
        cache.set(key, 1, settings.LOGIN_FAILURE_WINDOW)


@receiver(user_logged_in)
def forget_failures(sender, request=None, user=None, **kwargs):
    cache.delete(_key(client_address(request)))


class LoginThrottleMiddleware:
    """Answers 429 to login attempts from an address that has failed LOGIN_FAILURE_LIMIT times recently."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if (
            request.method == "POST"
            and request.path.endswith("/login/")
            and failures(client_address(request)) >= settings.LOGIN_FAILURE_LIMIT
        ):
            minutes = max(1, settings.LOGIN_FAILURE_WINDOW // 60)
            response = HttpResponse(
                f"Too many failed sign-in attempts from your address. Try again in {minutes} minutes.",
                status=429,
                content_type="text/plain; charset=utf-8",
            )
            response["Retry-After"] = str(settings.LOGIN_FAILURE_WINDOW)
            return response
        return self.get_response(request)


class SettingsRateMixin:
    """Reads the rate from a Django setting on every request, so the environment (and tests) can change it."""

    rate_setting = ""

    def get_rate(self):
        return getattr(settings, self.rate_setting)


class JobAnonThrottle(SettingsRateMixin, AnonRateThrottle):
    """Job submissions without a sign-in, per client address: `<scope>` rate from `rate_setting`."""

    scope = "jobs-anon"
    rate_setting = "LAB_JOB_ANON_RATE"


class JobUserThrottle(SettingsRateMixin, UserRateThrottle):
    """Job submissions per signed-in user; staff are exempt."""

    scope = "jobs-user"
    rate_setting = "LAB_JOB_USER_RATE"

    def allow_request(self, request, view):
        if not request.user or not request.user.is_authenticated or request.user.is_staff:
            return True
        return super().allow_request(request, view)
