"""The settings helpers refuse a value they cannot read and name the variable, instead of guessing."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from portal.settings import env_bool, env_int

SPELLINGS = [("1", True), ("true", True), (" Yes ", True), ("on", True)]
SPELLINGS += [("0", False), ("FALSE", False), ("no", False), ("off", False)]


@pytest.mark.parametrize(("raw", "expected"), SPELLINGS)
def test_yes_and_no_are_read_in_their_usual_spellings(monkeypatch, raw, expected):
    monkeypatch.setenv("PORTAL_TEST_FLAG", raw)
    assert env_bool("PORTAL_TEST_FLAG", not expected) is expected


def test_an_unset_or_empty_flag_takes_its_default(monkeypatch):
    monkeypatch.delenv("PORTAL_TEST_FLAG", raising=False)
    assert env_bool("PORTAL_TEST_FLAG", True) is True
    monkeypatch.setenv("PORTAL_TEST_FLAG", "")
    assert env_bool("PORTAL_TEST_FLAG", False) is False


@pytest.mark.parametrize("raw", ["ture", "2", "enabled", "nope"])
def test_a_misspelt_flag_stops_startup_and_names_the_variable(monkeypatch, raw):
    monkeypatch.setenv("DEBUG", raw)
    with pytest.raises(ImproperlyConfigured, match=rf"DEBUG='{raw}' is not a yes/no value"):
        env_bool("DEBUG", True)


def test_a_number_that_is_not_whole_or_is_negative_stops_startup_and_names_the_variable(monkeypatch):
    monkeypatch.setenv("API_MAX_TOKENS", "12")
    assert env_int("API_MAX_TOKENS", 512) == 12
    for raw in ("12.5", "lots", "5 12"):
        monkeypatch.setenv("API_MAX_TOKENS", raw)
        with pytest.raises(ImproperlyConfigured, match="API_MAX_TOKENS=.* is not a whole number"):
            env_int("API_MAX_TOKENS", 512)
    monkeypatch.setenv("API_MAX_TOKENS", "-1")
    with pytest.raises(ImproperlyConfigured, match="API_MAX_TOKENS='-1' is below its minimum of 0"):
        env_int("API_MAX_TOKENS", 512)
