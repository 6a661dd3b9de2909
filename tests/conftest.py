"""Fixtures of the cross-cutting tests: the reference data seeded once per module, settings for generated requests."""

import pytest


@pytest.fixture(scope="module")
def seeded_pages(django_db_setup, django_db_blocker):
    """The reference data seeded once per module inside a transaction rolled back afterwards; yields page URLs."""
    from django.db import transaction

    from .portal_pages import public_page_urls, seed_portal

    with django_db_blocker.unblock():
        atomic = transaction.atomic()
        atomic.__enter__()
        try:
            seed_portal()
            yield public_page_urls()
        finally:
            transaction.set_rollback(True)
            atomic.__exit__(None, None, None)


@pytest.fixture
def generated_request_settings(settings):
    """Settings for sweeps of generated requests: valid generations stay short (larger requests get the documented
    400) and the anonymous rate limits do not turn the sweep into 429s."""
    settings.API_MAX_TOKENS = 16
    settings.API_ANON_REQUESTS_PER_MINUTE = 100_000
    settings.API_ANON_TOKENS_PER_MINUTE = 10_000_000
    return settings
