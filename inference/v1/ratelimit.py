"""Per-caller rate limits for /v1/ (requests and tokens per minute) and the queue for concurrent generations.

Each limit is a budget of N a minute that holds at most N and refills continuously, one unit every 60/N seconds (a
leaky bucket, the generic cell rate algorithm's equivalent). Django's cache keeps, per caller and limit, the units in
use and when they were counted. A request fits when its cost fits in what is free; the Retry-After of a refusal is
how long until it would. There is no window boundary, so no burst of 2N across one (the fixed windows this replaces
let two requests 75 ms apart, either side of a minute, both through at a limit of 1).

With the embedded local-memory cache the budgets are per process; configure a shared cache (e.g. Redis) to
share them between processes. A lock makes each read-and-write atomic within a process; between processes
two requests arriving together may both fit where only one should.
"""

import math
import threading
import time
from collections import deque

from django.conf import settings
from django.core.cache import cache

from portal.api import ApiError

WINDOW_SECONDS = 60

_budget_lock = threading.Lock()


class RateLimited(ApiError):
    def __init__(self, message: str, retry_after: int, code: str):
        super().__init__(message, status_code=429, code=code)
        self.wait = retry_after  # DRF turns `wait` into the Retry-After header


def _key(kind: str, identity: str) -> str:
    return f"v1-gcra:{kind}:{identity}"


def _level(key: str, per_minute: int, now: float) -> float:
    """The units of the budget at `key` in use now: what was stored, less what has refilled since."""
    level, stamp = cache.get(key) or (0.0, now)
    return max(0.0, level - (now - stamp) * per_minute / WINDOW_SECONDS)


def _spend(kind: str, identity: str, per_minute: int, cost: float, *, charge=True, force=False) -> float | None:
    """Spend `cost` units of `identity`'s per-minute budget of `kind` when they fit; return the wait.

    The wait is 0.0 when they fit (and were spent, if `charge`), the seconds until they would fit otherwise
    (nothing spent), or None when they never can (more than the whole budget). With `force` the cost is spent
    whatever it comes to: `charge_tokens` charges the tokens used, after the fact. The budget is kept in units, not
    seconds, so a limit changed in the admin keeps what was used and refills at the new rate.
    """
    if per_minute <= 0:
        return 0.0 if force else None
    if cost > per_minute and not force:
        return None
    key = _key(kind, identity)
    with _budget_lock:
        now = time.time()
        level = _level(key, per_minute, now) + cost
        over = (level - per_minute) * WINDOW_SECONDS / per_minute
        if over > 1e-9 and not force:
            return over
        if charge:
            cache.set(key, (level, now), timeout=math.ceil(level * WINDOW_SECONDS / per_minute) + 5)
        return 0.0


def _refuse(message: str, wait: float | None, code: str) -> RateLimited:
    if wait is None:
        return RateLimited(f"{message} It can never fit; ask for less.", WINDOW_SECONDS, code)
    seconds = max(1, math.ceil(wait))
    return RateLimited(f"{message} Try again in {seconds} s.", seconds, code)


def admit(caller, reserve_tokens: int) -> None:
    """Count one request for `caller`; refuse (429) when its request or token budget is spent.

    `reserve_tokens` (prompt + the most completion tokens the request may produce) must fit in what is left of the
    token budget; the tokens actually used are charged afterwards with `charge_tokens`. A refused request spends
    nothing.
    """
    if reserve_tokens > 0:
        wait = _spend("tok", caller.identity, caller.tokens_per_minute, reserve_tokens, charge=False)
        if wait != 0.0:
            raise _refuse(
                f"Rate limit reached: {caller.tokens_per_minute} tokens per minute "
                f"(this request may need {reserve_tokens}).",
                wait,
                "tokens_per_minute_exceeded",
            )
    wait = _spend("req", caller.identity, caller.requests_per_minute, 1)
    if wait != 0.0:
        raise _refuse(
            f"Rate limit reached: {caller.requests_per_minute} requests per minute.",
            wait,
            "requests_per_minute_exceeded",
        )


def charge_tokens(caller, tokens: int) -> None:
    """Charge the tokens a request used; a charge past the budget pushes its refill time further out."""
    if tokens > 0:
        _spend("tok", caller.identity, caller.tokens_per_minute, tokens, force=True)


_slots = threading.Condition()
_slots_in_use = 0
_line: deque = deque()  # the requests waiting for a slot, first come first served
_mean_hold = 0.0  # seconds a slot is held, a moving average over the generations that ended (0 before any)


class GenerationSlot:
    """One of this process's API_MAX_CONCURRENT_GENERATIONS slots; release() is idempotent.

    A streamed response holds its slot until the stream ends (or the client goes away), so it is released by
    the stream itself rather than by a `with` block around the view.
    """

    def __init__(self):
        self._held = True
        self._since = time.monotonic()

    def release(self) -> None:
        global _slots_in_use, _mean_hold
        with _slots:
            if self._held:
                self._held = False
                _slots_in_use -= 1
                held = time.monotonic() - self._since
                _mean_hold = held if _mean_hold == 0.0 else 0.8 * _mean_hold + 0.2 * held
                _slots.notify_all()


def _saturated(wait: float) -> ApiError:
    error = ApiError(
        "The server is generating at capacity right now; retry shortly.",
        status_code=503,
        code="server_saturated",
    )
    error.wait = max(1, math.ceil(wait))
    return error


def acquire_generation_slot() -> GenerationSlot:
    """A generation slot, after a wait in this process's queue when all are busy (concurrent generations of a model
    are batched, so the slots are the batch's rows). A 503 (with Retry-After) answers when the wait would pass
    API_GENERATION_QUEUE_SECONDS: at once when the queue ahead, at the mean time a slot is held, would take longer,
    else once the bound has passed."""
    global _slots_in_use
    limit, bound = settings.API_MAX_CONCURRENT_GENERATIONS, settings.API_GENERATION_QUEUE_SECONDS
    with _slots:
        if limit <= 0:
            raise _saturated(2)
        if _slots_in_use >= limit or _line:
            expected = (len(_line) + 1) / limit * _mean_hold
            if expected > bound or bound <= 0:
                raise _saturated(expected or 2)
            _wait_in_line(limit, time.monotonic() + bound)
        _slots_in_use += 1
    return GenerationSlot()


def _wait_in_line(limit: int, deadline: float) -> None:
    """Wait (holding _slots) until a slot is free and every request queued earlier has taken one; 503 at deadline."""
    me = object()
    _line.append(me)
    try:
        while _slots_in_use >= limit or _line[0] is not me:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _saturated(_mean_hold or 2)
            _slots.wait(left)
    finally:
        _line.remove(me)
        _slots.notify_all()  # the next in line looks again
