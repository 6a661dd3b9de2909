"""Council decoding (eqlm.council.CouncilGenerator) over members running on the ONNX runtime."""

import numpy as np
import pytest

from eqlm.council import CouncilGenerator, CouncilStats, Kinetic, log_softmax
from eqlm.generation import GenerationRequest, Generator


@pytest.fixture(scope="module")
def two_models(tiny_onnx_export):
    return Generator(tiny_onnx_export(1)), Generator(tiny_onnx_export(2))


def run(generator, **params):
    request = GenerationRequest(prompt=params.pop("prompt", "In the beginning"), max_tokens=12, depth=6, **params)
    stream = generator.stream(request)
    events = list(stream)
    return events, stream.stats


def test_a_model_listed_twice_decodes_as_that_model_alone(two_models):
    a, _ = two_models
    alone, _ = run(a, temperature=0)
    council, stats = run(CouncilGenerator([a, a], Kinetic()), temperature=0)
    assert [e.token_id for e in council] == [e.token_id for e in alone]
    assert isinstance(stats, CouncilStats) and len(stats.entries) == len(council)
    for entry in stats.entries:
        assert entry.weights == pytest.approx([0.5, 0.5])
        assert entry.members[0] == entry.members[1]


def test_every_token_records_weights_leader_and_member_telemetry(two_models):
    a, b = two_models
    events, stats = run(CouncilGenerator([a, b], Kinetic(beta=4)), temperature=0, tol=0.05)
    assert len(stats.entries) == len(events) == 12
    for entry in stats.entries:
        assert sum(entry.weights) == pytest.approx(1) and min(entry.weights) >= 0
        assert entry.leader == int(np.argmax(entry.weights))
        assert 1 <= entry.iterations <= 32
        assert all(1 <= m["iterations"] <= 32 for m in entry.members)
        assert np.exp(entry.log_y).sum() == pytest.approx(1)


def test_greedy_council_tokens_are_the_argmax_of_y(two_models):
    a, b = two_models
    events, stats = run(CouncilGenerator([a, b], Kinetic(beta=0)), temperature=0)
    for event, entry in zip(events, stats.entries, strict=True):
        assert event.token_id == int(np.argmax(entry.log_y))


def test_beta_zero_first_token_is_the_average_of_the_members_log_probs(two_models):
    a, b = two_models
    ids = np.asarray([list(b"In the beginning")])
    own = [log_softmax(g.model.full_solve(ids, [6])[6][0, -1].astype(np.float64)) for g in (a, b)]
    _, stats = run(CouncilGenerator([a, b], Kinetic(beta=0, tol=1e-12, max_iter=256)), temperature=0)
    log_y = stats.entries[0].log_y
    expected = (own[0] + own[1]) / 2
    np.testing.assert_allclose(log_y - log_y[0], expected - expected[0], atol=1e-4)


def test_seeded_sampling_repeats_and_stop_strings_end_the_text(two_models):
    a, b = two_models
    council = CouncilGenerator([a, b], Kinetic())
    first, _ = run(council, temperature=1.0, seed=7)
    again, _ = run(council, temperature=1.0, seed=7)
    assert [e.token_id for e in first] == [e.token_id for e in again]
    text = "".join(e.text for e in first)
    stop = text[3:5]
    cut, stats = run(council, temperature=1.0, seed=7, stop=(stop,))
    assert "".join(e.text for e in cut) == text[: text.find(stop)]
    assert stats.finish_reason == "stop"


def test_a_model_listed_twice_scores_as_that_model_alone(two_models):
    a, _ = two_models
    request = {"prompt": "Let there be", "max_tokens": 6, "depth": 6, "temperature": 0}
    request.update(logprobs=True, echo_logprobs=True)
    alone = a.stream(GenerationRequest(**request))
    events = list(alone)
    council = CouncilGenerator([a, a], Kinetic()).stream(GenerationRequest(**request))
    council_events = list(council)
    for own, game in zip(events, council_events, strict=True):
        np.testing.assert_allclose(game.logprobs, own.logprobs, atol=1e-9)
    np.testing.assert_allclose(council.stats.prompt_logprobs, alone.stats.prompt_logprobs, atol=1e-9)
    assert council.stats.prompt_weights.shape == (len("Let there be") - 1, 2)


@pytest.mark.parametrize(
    ("params", "why"), [({"start": "noise"}, 'start "noise"'), ({"halt": "kl", "tol": 0.01}, 'halt "kl"')]
)
def test_the_council_refuses_a_noise_start_and_kl_halting_rather_than_ignoring_them(two_models, params, why):
    council = CouncilGenerator(list(two_models), Kinetic())
    with pytest.raises(ValueError, match=why):
        run(council, temperature=0, **params)
    assert council.max_depth == min(m.max_depth for m in two_models)
