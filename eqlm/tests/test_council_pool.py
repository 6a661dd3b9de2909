"""The council's arithmetic pool and the reputation's learning rate: y = sum_i w_i(y) p_i, damped in probabilities."""

import math

import numpy as np
import pytest

from eqlm.council import CouncilGenerator, Kinetic, equilibrium, log_softmax
from eqlm.council_memory import fixed_share_mixture, fixed_share_reputations, fixed_share_update
from eqlm.generation import GenerationRequest, Generator

ARITHMETIC = {"pool": "arithmetic"}


def members(m: int = 3, v: int = 11, seed: int = 0, scale: float = 2.0) -> np.ndarray:
    return log_softmax(scale * np.random.default_rng(seed).normal(size=(m, v)))


def reputations(positions: int, m: int, seed: int) -> np.ndarray:
    return np.log(np.random.default_rng(seed).dirichlet(np.ones(m), size=positions))


# --- the pool -------------------------------------------------------------------------------------------------------


def test_at_beta_zero_with_memory_the_arithmetic_pool_is_the_fixed_share_mixture():
    lp = log_softmax(2 * np.random.default_rng(1).normal(size=(6, 3, 13)))
    log_pi = reputations(6, 3, seed=2)
    eq = equilibrium(lp, beta=0.0, log_reputation=log_pi, tol=1e-15, max_iter=256, **ARITHMETIC)
    np.testing.assert_allclose(eq.log_y, fixed_share_mixture(lp, log_pi), atol=1e-12)
    np.testing.assert_allclose(eq.weights, np.exp(log_pi), atol=1e-12)


def test_at_beta_zero_the_damped_update_closes_a_fixed_fraction_of_the_gap_each_step():
    """The map is constant (w does not depend on y), so y_k - y* = (1 - eta)^k (p_ref - y*)."""
    lp = members(seed=3)
    log_pi = np.log(np.array([0.6, 0.3, 0.1]))
    target = np.exp(fixed_share_mixture(lp, log_pi))
    start = np.exp(lp).mean(axis=0)
    for k in (1, 2, 5):
        eq = equilibrium(lp, beta=0.0, eta=0.3, log_reputation=log_pi, max_iter=k, tol=1e-300, **ARITHMETIC)
        np.testing.assert_allclose(eq.y - target, 0.7**k * (start - target), atol=1e-14)


def test_eta_one_reaches_the_mixture_in_one_update_and_stops_on_the_second():
    lp = np.log(np.array([[0.9, 0.1], [0.5, 0.5]]))
    eq = equilibrium(lp, beta=0.0, eta=1.0, tol=1e-9, log_reputation=np.log([0.25, 0.75]), **ARITHMETIC)
    np.testing.assert_allclose(eq.y, [0.25 * 0.9 + 0.75 * 0.5, 0.25 * 0.1 + 0.75 * 0.5], atol=1e-15)
    assert eq.iterations == 2 and eq.converged


def test_without_memory_at_beta_zero_it_is_the_mean_of_the_distributions():
    lp = members(seed=4)
    eq = equilibrium(lp, beta=0.0, **ARITHMETIC)
    np.testing.assert_allclose(eq.y, np.exp(lp).mean(axis=0), atol=1e-15)
    assert eq.iterations == 1  # p_ref = the mean is already the fixed point


def test_the_fixed_point_satisfies_the_arithmetic_influence_equation():
    lp = log_softmax(np.random.default_rng(5).normal(size=(5, 3, 9)))
    log_pi = reputations(5, 3, seed=6)
    eq = equilibrium(lp, beta=0.5, log_reputation=log_pi, tol=1e-14, max_iter=256, **ARITHMETIC)
    assert eq.converged.all()
    score = 0.5 * np.einsum("tv,tmv->tm", eq.y, lp) + log_pi
    w = np.exp(score - score.max(-1, keepdims=True))
    np.testing.assert_allclose(eq.weights, w / w.sum(-1, keepdims=True), atol=1e-12)
    np.testing.assert_allclose(eq.y, np.einsum("tm,tmv->tv", eq.weights, np.exp(lp)), atol=1e-12)


def test_below_the_contraction_bound_the_fixed_point_does_not_depend_on_the_start():
    """L <= beta D P / 4 (D: the widest spread of a log-ratio l_i - l_j, P: the largest L1 distance between members'
    distributions); below 1 the map contracts, so every start reaches the one fixed point."""
    lp = members(m=3, v=9, seed=7, scale=1.0)
    spread = max((lp[i] - lp[j]).max() - (lp[i] - lp[j]).min() for i in range(3) for j in range(3))
    distance = max(np.abs(np.exp(lp[i]) - np.exp(lp[j])).sum() for i in range(3) for j in range(3))
    beta = 0.9 * 4 / (spread * distance)
    found = [equilibrium(lp, beta=beta, reference=r, tol=1e-14, max_iter=256, **ARITHMETIC) for r in ("mean", 0, 2)]
    assert all(eq.converged for eq in found)
    for eq in found[1:]:
        np.testing.assert_allclose(eq.y, found[0].y, atol=1e-12)


def test_tau_mixes_in_the_reference_rather_than_raising_it_to_a_power():
    lp = members(seed=8)
    eq = equilibrium(lp, beta=0.0, tau=0.5, reference=1, tol=1e-15, max_iter=256, **ARITHMETIC)
    p = np.exp(lp)
    np.testing.assert_allclose(eq.y, (p.mean(axis=0) + 0.5 * p[1]) / 1.5, atol=1e-13)


@pytest.mark.parametrize("beta", [0.0, 2.0, 50.0])
def test_a_member_listed_twice_or_a_sure_reputation_is_that_member(beta):
    p = members(m=2, seed=9)
    twice = equilibrium(np.stack([p[0], p[0]]), beta=beta, **ARITHMETIC)
    np.testing.assert_allclose(twice.log_y, p[0], atol=1e-12)
    sure = equilibrium(p, beta=beta, log_reputation=np.log([1e-300, 1.0]), tol=1e-15, max_iter=256, **ARITHMETIC)
    np.testing.assert_allclose(sure.log_y, p[1], atol=1e-9)


# --- the controls ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"pool": "harmonic"}, "kinetic.pool"),
        ({"pool": None}, "kinetic.pool"),
        ({"pool": "Arithmetic"}, "kinetic.pool"),
        ({"learning_rate": 0.0}, "kinetic.learning_rate"),
        ({"learning_rate": -1.0}, "kinetic.learning_rate"),
        ({"learning_rate": float("inf")}, "kinetic.learning_rate"),
        ({"learning_rate": float("nan")}, "kinetic.learning_rate"),
        ({"learning_rate": "1"}, "kinetic.learning_rate"),
        ({"learning_rate": True}, "kinetic.learning_rate"),
    ],
)
def test_pool_and_learning_rate_are_checked_by_name(change, field):
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        Kinetic(**{"memory": "fixed_share", **change}).validate(members=2)


def test_the_solver_refuses_an_unknown_pool_naming_it():
    with pytest.raises(ValueError, match=r"kinetic\.pool"):
        equilibrium(members(), pool="harmonic")


def test_both_pools_and_any_positive_learning_rate_are_accepted():
    for pool in ("geometric", "arithmetic"):
        for rate in (1e-3, 1, 2.5):
            Kinetic(memory="fixed_share", pool=pool, learning_rate=rate).validate(members=2)
    assert Kinetic().pool == "geometric" and Kinetic().learning_rate == 1.0
    assert Kinetic.from_dict({"pool": "arithmetic", "learning_rate": 0.5}) == Kinetic(
        pool="arithmetic", learning_rate=0.5
    )


# --- the learning rate ----------------------------------------------------------------------------------------------


def test_the_learning_rate_is_bayes_rule_on_tempered_probabilities():
    rng = np.random.default_rng(10)
    seen = np.log(rng.uniform(0.01, 1, size=(30, 3)))
    for rate in (0.25, 0.5, 2.0):
        tempered = fixed_share_reputations(seen, 0.02, learning_rate=rate)
        np.testing.assert_allclose(tempered, fixed_share_reputations(rate * seen, 0.02), atol=1e-12)
    pi = np.log([0.5, 0.5])
    np.testing.assert_array_equal(
        fixed_share_update(pi, seen[0, :2], 0.1, 1.0), fixed_share_update(pi, seen[0, :2], 0.1)
    )


def test_a_learning_rate_below_one_moves_the_reputation_less_per_byte():
    seen = np.log(np.array([[0.5, 0.05]] * 5))
    bayes = np.exp(fixed_share_reputations(seen, 0.0))[:, 0]
    tempered = np.exp(fixed_share_reputations(seen, 0.0, learning_rate=0.5))[:, 0]
    assert (tempered[1:] < bayes[1:]).all() and (np.diff(tempered) > 0).all()
    assert tempered[2] == pytest.approx(bayes[1])  # two bytes at rate 1/2 are one byte at rate 1


# --- decoding -------------------------------------------------------------------------------------------------------

POOLED = {"memory": "fixed_share", "share": 0.05, "pool": "arithmetic", "learning_rate": 0.5}


@pytest.fixture(scope="module")
def two_models(tiny_onnx_export):
    return Generator(tiny_onnx_export(1)), Generator(tiny_onnx_export(2))


def run(generator, **request):
    stream = generator.stream(GenerationRequest(depth=6, logprobs=True, **request))
    return list(stream), stream.stats


def members_log_probs(models, ids: list[int]) -> np.ndarray:
    batch = np.asarray([ids])
    return np.stack([log_softmax(g.model.full_solve(batch, [6])[6][0].astype(np.float64)) for g in models], axis=1)


def test_generating_at_beta_zero_draws_from_the_tempered_fixed_share_mixture(two_models):
    council = CouncilGenerator(list(two_models), Kinetic(**POOLED, beta=0.0, tol=1e-15, max_iter=256))
    prompt = "In the beginning God"
    events, stats = run(council, prompt=prompt, max_tokens=6, temperature=0)
    ids = list(prompt.encode()) + [e.token_id for e in events]
    lp = members_log_probs(two_models, ids)
    seen = lp[np.arange(len(ids) - 1), :, ids[1:]]
    log_pi = fixed_share_reputations(seen, POOLED["share"], learning_rate=POOLED["learning_rate"])
    start = len(prompt) - 1
    at = np.arange(start, start + len(events))
    expected = fixed_share_mixture(lp[at], log_pi[at])
    np.testing.assert_allclose(np.stack([e.logprobs for e in events]), expected, atol=1e-5)
    assert [e.token_id for e in events] == [int(row.argmax()) for row in expected]
    np.testing.assert_allclose([entry.reputations for entry in stats.entries], np.exp(log_pi[at]), atol=1e-5)


def test_scoring_with_the_arithmetic_pool_gives_the_rows_generation_gave(two_models):
    council = CouncilGenerator(list(two_models), Kinetic(**POOLED, beta=0.5))
    prompt = "And God said, Let"
    events, generated = run(council, prompt=prompt, max_tokens=6, temperature=0)
    ids = tuple(prompt.encode()) + tuple(e.token_id for e in events)
    _, scored = run(council, prompt_ids=ids, prompt="", max_tokens=0, echo_logprobs=True)
    start = len(prompt) - 1
    rows = scored.prompt_logprobs[start : start + len(events)]
    np.testing.assert_allclose(rows, np.stack([e.logprobs for e in events]), atol=1e-5)
    weights = np.array([entry.weights for entry in generated.entries])
    np.testing.assert_allclose(scored.prompt_weights[start : start + len(events)], weights, atol=1e-5)
    assert all(math.isclose(sum(entry.weights), 1) for entry in generated.entries)
