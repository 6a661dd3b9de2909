"""Per-caller rate limits for /v1/ (requests and tokens per minute) and the cap on concurrent generations.

Counters are fixed one-minute windows in Django's cache: with the embedded local-memory cache they are per
process; configure a shared cache (e.g. Redis) to share them between processes.
"""

import math
import threading
import time

from django.conf import settings
from django.core.cache import cache

from portal.api import ApiError

WINDOW_SECONDS = 60


class RateLimited(ApiError):
    def __init__(self, message: str, retry_after: int, code: str):
        super().__init__(message, status_code=429, code=code)
        self.wait = retry_after  # DRF turns `wait` into the Retry-After header


def _window() -> tuple[int, int]:
    now = time.time()
    start = int(now // WINDOW_SECONDS) * WINDOW_SECONDS
    return start, max(1, math.ceil(start + WINDOW_SECONDS - now))


def _counter(kind: str, identity: str, start: int) -> str:
    return f"v1-rl:{kind}:{identity}:{start}"


def _read(key: str) -> int:
    return int(cache.get(key) or 0)


def _add(key: str, amount: int) -> int:
    cache.add(key, 0, timeout=WINDOW_SECONDS + 5)
    try:
        return cache.incr(key, amount)
    except ValueError:  # expired between add and incr
        cache.set(key, amount, timeout=WINDOW_SECONDS + 5)
        return amount


def admit(caller, reserve_tokens: int) -> None:
    """Count one request for `caller`; refuse (429) when its request or token budget for this minute is spent.

    `reserve_tokens` (prompt + the most completion tokens the request may produce) must fit in what is left of the
    token budget; the tokens actually used are charged afterwards with `charge_tokens`.
    """
    start, retry_after = _window()
    used_tokens = _read(_counter("tok", caller.identity, start))
    if used_tokens + reserve_tokens > caller.tokens_per_minute:
        raise RateLimited(
            f"Rate limit reached: {caller.tokens_per_minute} tokens per minute "
            f"({used_tokens} used, this request may need {reserve_tokens}). Try again in {retry_after} s.",
            retry_after,
            "tokens_per_minute_exceeded",
        )
    requests = _add(_counter("req", caller.identity, start), 1)
    if requests > caller.requests_per_minute:
        raise RateLimited(
            f"Rate limit reached: {caller.requests_per_minute} requests per minute. Try again in {retry_after} s.",
            retry_after,
            "requests_per_minute_exceeded",
        )


def charge_tokens(caller, tokens: int) -> None:
    if tokens > 0:
        start, _ = _window()
        _add(_counter("tok", caller.identity, start), tokens)


_slots_lock = threading.Lock()
_slots_in_use = 0


class GenerationSlot:
    """One of this process's API_MAX_CONCURRENT_GENERATIONS slots; release() is idempotent.

    A streamed response holds its slot until the stream ends (or the client goes away), so it is released by
    the stream itself rather than by a `with` block around the view.
    """

    def __init__(self):
        self._held = True

    def release(self) -> None:
        global _slots_in_use
        with _slots_lock:
            if self._held:
                self._held = False
                _slots_in_use -= 1


def acquire_generation_slot() -> GenerationSlot:
    """A generation slot, or a 503 (with Retry-After) when all are busy."""
    global _slots_in_use
    with _slots_lock:
        if _slots_in_use >= settings.API_MAX_CONCURRENT_GENERATIONS:
            error = ApiError(
                "The server is generating at capacity right now; retry shortly.",
                status_code=503,
                code="server_saturated",
            )
            error.wait = 2
            raise error
        _slots_in_use += 1
    return GenerationSlot()
