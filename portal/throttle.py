"""Login throttling for the admin: after too many failed logins from one address, refuse for a while."""

from django.conf import settings
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.core.cache import cache
from django.dispatch import receiver
from django.http import HttpResponse


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
