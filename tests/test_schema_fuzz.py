"""Property-based requests against every operation of /api/schema/: never a 5xx, every 4xx in the error shape.

The in-suite run draws a few examples per operation; `make reliability` draws many more (scripts/reliability.py).
"""

import os

import pytest
from django.test import Client

from .fuzzing import client_for, fuzz_operation, portal_hints, schema_operations
from .report import record

pytestmark = [pytest.mark.django_db, pytest.mark.slow]  # a generated-request sweep
EXAMPLES_PER_OPERATION = int(os.environ.get("FUZZ_EXAMPLES", "6"))  # make reliability: 100


def test_every_api_operation_survives_generated_requests(seeded_pages, staff_user, generated_request_settings):
    found = schema_operations()
    assert len(found) >= 18
    anonymous, staff = Client(), Client()
    staff.force_login(staff_user)
    hints = portal_hints()
    outcomes = [fuzz_operation(op, client_for(op, anonymous, staff), hints, EXAMPLES_PER_OPERATION) for op in found]
    failures = [failure for outcome in outcomes for failure in outcome.failures]
    record(
        "fuzz",
        {
            "operations": len(outcomes),
            "examples_per_operation": EXAMPLES_PER_OPERATION,
            "requests": sum(outcome.tried for outcome in outcomes),
            "failures": failures,
            "by_operation": [
                {"operation": o.operation, "requests": o.tried, "statuses": o.statuses, "failures": len(o.failures)}
                for o in outcomes
            ],
        },
    )
    assert failures == []
    assert sum(outcome.tried for outcome in outcomes) >= EXAMPLES_PER_OPERATION * len(found) // 2
    # The drawn requests reach both sides: successes and refusals.
    statuses = {status for outcome in outcomes for status in outcome.statuses}
    assert any(status < 300 for status in statuses) and any(400 <= status < 500 for status in statuses)
