"""Benchmarks test fixtures: a clean cache per test, and the seeded rows once per module."""

import pytest
from django.db import transaction


@pytest.fixture(autouse=True)
def _clean_cache():
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


@pytest.fixture(scope="module")
def seeded_module(django_db_setup, django_db_blocker):
    """The programme's rows and declared tables, loaded once for a module inside a transaction rolled back after it.

    Each test still runs in its own savepoint, so what a test writes disappears after that test.
    """
    from benchmarks_app.seed import seed

    with django_db_blocker.unblock(), transaction.atomic():
        seed()
        yield
        transaction.set_rollback(True)


@pytest.fixture
def seeded(seeded_module, db):
    """Use the module's seeded rows in a test."""
