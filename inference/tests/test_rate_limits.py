"""The /v1/ budgets refill continuously: no window boundary lets a burst through, and Retry-After is exact."""

import pytest
from django.core.cache import cache

from inference.v1 import ratelimit
from inference.v1.keys import Caller


class Clock:
    """The limiter's clock, moved by hand (the limiter reads time.time())."""

    def __init__(self, now: float):
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    cache.clear()
    clock = Clock(1_000_000 * 60 - 0.024)  # 24 ms before a whole minute
    monkeypatch.setattr(ratelimit.time, "time", clock)
    yield clock
    cache.clear()


def caller(rpm=1, tpm=1000, name="ip:192.0.2.1"):
    return Caller(name, rpm, tpm)


def test_two_requests_either_side_of_a_minute_boundary_are_one_too_many_at_one_a_minute(clock):
    ratelimit.admit(caller(rpm=1), 0)
    clock.now += 0.075  # now 51 ms past the minute: a fixed window would have started afresh
    with pytest.raises(ratelimit.RateLimited) as refused:
        ratelimit.admit(caller(rpm=1), 0)
    assert refused.value.status_code == 429 and refused.value.error_code == "requests_per_minute_exceeded"
    assert refused.value.wait == 60  # 59.925 s until the budget holds one again


def test_a_budget_refills_one_request_every_sixty_over_n_seconds(clock):
    for _ in range(2):
        ratelimit.admit(caller(rpm=2), 0)
    with pytest.raises(ratelimit.RateLimited) as refused:
        ratelimit.admit(caller(rpm=2), 0)
    assert refused.value.wait == 30
    clock.now += 29.9
    with pytest.raises(ratelimit.RateLimited):
        ratelimit.admit(caller(rpm=2), 0)
    clock.now += 0.1
    ratelimit.admit(caller(rpm=2), 0)


def test_a_refused_request_spends_nothing(clock):
    ratelimit.admit(caller(rpm=1), 0)
    for _ in range(5):
        clock.now += 10
        with pytest.raises(ratelimit.RateLimited):
            ratelimit.admit(caller(rpm=1), 0)
    clock.now += 10  # 60 s after the one admitted request, whatever was refused in between
    ratelimit.admit(caller(rpm=1), 0)


def test_tokens_charged_after_a_request_hold_back_the_next_reservation_until_they_refill(clock):
    who = caller(rpm=100, tpm=60)
    ratelimit.admit(who, 36)
    ratelimit.charge_tokens(who, 36)
    with pytest.raises(ratelimit.RateLimited) as refused:
        ratelimit.admit(who, 36)
    assert refused.value.error_code == "tokens_per_minute_exceeded" and refused.value.wait == 12
    clock.now += 12
    ratelimit.admit(who, 36)


def test_a_reservation_larger_than_the_whole_budget_says_it_can_never_fit(clock):
    with pytest.raises(ratelimit.RateLimited) as refused:
        ratelimit.admit(caller(tpm=60), 61)
    assert "never fit" in str(refused.value.detail)


def test_callers_have_budgets_of_their_own(clock):
    ratelimit.admit(caller(rpm=1, name="ip:192.0.2.1"), 0)
    ratelimit.admit(caller(rpm=1, name="ip:192.0.2.2"), 0)


def test_a_limit_raised_in_the_admin_keeps_what_was_used_and_refills_at_the_new_rate(clock):
    ratelimit.admit(caller(rpm=1), 0)
    with pytest.raises(ratelimit.RateLimited):
        ratelimit.admit(caller(rpm=1), 0)
    for _ in range(59):  # one of sixty used
        ratelimit.admit(caller(rpm=60), 0)
    with pytest.raises(ratelimit.RateLimited) as refused:
        ratelimit.admit(caller(rpm=60), 0)
    assert refused.value.wait == 1
