"""Fixtures for findings_app tests: the whole record as loaded by `manage.py seed`."""

import pytest

from findings_app.services import import_findings, read_fixture


@pytest.fixture(scope="session")
def fixture_data():
    """The parsed fixtures/findings.yaml (read once per session)."""
    return read_fixture()


@pytest.fixture
def record(db, fixture_data):
    """The full findings record in the test database."""
    import_findings(fixture_data)
    return fixture_data
