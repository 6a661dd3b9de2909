"""Council test fixtures: the committed record loaded into the test database."""

import json

import pytest

from council_app import seed as council_seed


@pytest.fixture(scope="session")
def council_data():
    return json.loads(council_seed.FIXTURE.read_text())


@pytest.fixture
def council(db, council_data):
    """The full council record (reference data) as `manage.py seed` loads it."""
    council_seed.load(council_data)
    return council_data
