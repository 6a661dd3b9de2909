"""Fixtures of the cross-cutting tests: the reference data seeded once per module."""

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
