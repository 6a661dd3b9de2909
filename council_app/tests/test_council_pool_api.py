"""The council's pool and learning rate on /v1/: refused by name when bad, reported with the controls used, and the
arithmetic pool at beta = 0 with memory scores a text as the fixed-share mixture of its members."""

import json

import numpy as np
import pytest
from rest_framework.test import APIClient

from eqlm.council_game import MEMORY_DEFAULTS
from eqlm.council_memory import fixed_share_reputations
from eqlm.logprobs import logsumexp

TEXT = "In the beginning God created the heaven"


@pytest.fixture
def api(council_models_served, db):
    return APIClient()


def post(api, body: dict):
    return api.post("/v1/completions", json.dumps(body), content_type="application/json")


def echoed(api, model: str, **extra) -> list[float]:
    """Each byte's log-probability after the first (echo, no completion)."""
    body = {"model": model, "prompt": TEXT, "max_tokens": 0, "echo": True, "logprobs": 0, **extra}
    response = post(api, body)
    assert response.status_code == 200, response.content
    return response.json()["choices"][0]["logprobs"]["token_logprobs"][1:]


@pytest.mark.parametrize(
    ("kinetic", "param"),
    [
        ({"pool": "harmonic"}, "kinetic.pool"),
        ({"pool": None}, "kinetic.pool"),
        ({"pool": 1}, "kinetic.pool"),
        ({"learning_rate": 0}, "kinetic.learning_rate"),
        ({"learning_rate": -0.5}, "kinetic.learning_rate"),
        ({"learning_rate": "fast"}, "kinetic.learning_rate"),
    ],
)
def test_an_unknown_or_invalid_pool_or_learning_rate_is_a_400_naming_it(api, kinetic, param):
    response = post(api, {"model": "eqlm-council", "prompt": "x", "max_tokens": 1, "kinetic": kinetic})
    assert response.status_code == 400, response.content
    assert response.json()["error"]["param"] == param


def test_at_beta_zero_with_memory_the_arithmetic_pool_scores_the_text_as_the_fixed_share_mixture(api):
    share, rate = 0.05, 0.5
    kinetic = {"pool": "arithmetic", "beta": 0, "memory": "fixed_share", "share": share, "learning_rate": rate}
    council = echoed(api, "eqlm-council", kinetic={**kinetic, "tol": 1e-14, "max_iter": 256})
    seen = np.array([echoed(api, m) for m in ("eqlm-demo-anytime", "eqlm-code")]).T  # [T - 1, M]: each member's byte
    log_pi = fixed_share_reputations(seen, share, learning_rate=rate)[:-1]  # before each byte
    np.testing.assert_allclose(council, logsumexp(log_pi + seen, axis=-1), atol=1e-6)
    assert not np.allclose(seen[:, 0], seen[:, 1], atol=1e-3)  # the members differ, so the test can fail


def test_the_answer_reports_the_pool_and_learning_rate_used(api):
    def used(kinetic: dict) -> dict:
        response = post(api, {"model": "eqlm-council", "prompt": "In the", "max_tokens": 2, "kinetic": kinetic})
        assert response.status_code == 200, response.content
        return response.json()["eqlm"]["council"]["kinetic"]

    served = used({})
    assert {k: served[k] for k in MEMORY_DEFAULTS} == MEMORY_DEFAULTS
    memoryless = used({"memory": "none"})
    assert memoryless["pool"] == "geometric" and memoryless["beta"] == 2.0  # today's game
    chosen = used({"pool": "arithmetic", "learning_rate": 0.25, "memory": "none"})
    assert chosen["pool"] == "arithmetic" and chosen["learning_rate"] == 0.25


def test_the_models_list_states_the_memory_defaults_the_library_chose(api):
    council = next(m for m in api.get("/v1/models").json()["data"] if m["id"] == "eqlm-council")
    defaults = council["eqlm"]["kinetic_defaults"]
    assert {k: defaults[k] for k in MEMORY_DEFAULTS} == MEMORY_DEFAULTS
