"""The council's equilibrium solve (eqlm.council_game, pure numpy) against hand-worked cases."""

import math

import numpy as np
import pytest

from eqlm.council_game import Kinetic, equilibrium, influence_weights
from eqlm.logprobs import log_softmax


def logs(*rows) -> np.ndarray:
    return np.log(np.asarray(rows, dtype=np.float64))


def random_members(m: int = 3, v: int = 7, seed: int = 0) -> np.ndarray:
    return log_softmax(np.random.default_rng(seed).normal(size=(m, v)) * 2)


def test_one_update_matches_the_hand_worked_step():
    # p1 = (0.9, 0.1), p2 = (0.5, 0.5); y0 = mean = (0.7, 0.3).
    lp = logs([0.9, 0.1], [0.5, 0.5])
    s1 = 0.7 * math.log(0.9) + 0.3 * math.log(0.1)  # <y0, l1> = -0.764528...
    s2 = math.log(0.5)
    w1 = 1 / (1 + math.exp(2 * (s2 - s1)))  # softmax(2 * s) = 0.4644 for member 1
    target = [w1 * math.log(0.9) + (1 - w1) * math.log(0.5), w1 * math.log(0.1) + (1 - w1) * math.log(0.5)]
    mixed = [0.5 * math.log(0.7) + 0.5 * target[0], 0.5 * math.log(0.3) + 0.5 * target[1]]
    z = math.exp(mixed[0]) + math.exp(mixed[1])
    expected = [math.exp(mixed[0]) / z, math.exp(mixed[1]) / z]

    eq = equilibrium(lp, beta=2, tau=0, eta=0.5, max_iter=1, tol=1e-12)

    assert w1 == pytest.approx(0.46437, abs=1e-5)
    np.testing.assert_allclose(eq.y, expected, atol=1e-12)
    assert eq.iterations == 1
    assert eq.residual == pytest.approx(abs(expected[0] - 0.7) + abs(expected[1] - 0.3), abs=1e-12)
    assert not eq.converged


def test_beta_zero_is_logit_averaging():
    lp = random_members(3, 9, seed=1)
    eq = equilibrium(lp, beta=0, tau=0, eta=0.5, max_iter=256, tol=1e-12)
    assert eq.converged
    expected = lp.mean(axis=0)
    np.testing.assert_allclose(eq.log_y - eq.log_y[0], expected - expected[0], atol=1e-9)
    np.testing.assert_allclose(eq.weights, [1 / 3] * 3, atol=1e-15)


def test_eta_one_reaches_logit_averaging_in_one_update_and_stops_on_the_second():
    lp = logs([0.9, 0.1], [0.5, 0.5])  # y0 = mean = (0.7, 0.3)
    eq = equilibrium(lp, beta=0, eta=1.0, tol=1e-9)
    np.testing.assert_allclose(eq.y, [0.75, 0.25], atol=1e-12)  # sqrt(p1 p2) = (0.6708, 0.2236), renormalised
    assert eq.iterations == 2 and eq.converged


def test_one_member_listed_twice_is_that_member():
    p = log_softmax(np.random.default_rng(3).normal(size=11))
    for beta in (0.0, 2.0, 50.0):
        eq = equilibrium(np.stack([p, p]), beta=beta)
        np.testing.assert_allclose(eq.log_y, p, atol=1e-12)
        np.testing.assert_allclose(eq.weights, [0.5, 0.5], atol=1e-12)
        assert eq.converged and eq.iterations == 1


def test_a_large_tau_toward_a_reference_member_takes_its_greedy_choice():
    lp = logs([0.6, 0.3, 0.1], [0.1, 0.2, 0.7])  # member 0 prefers token 0, member 1 token 2
    for ref, best in ((0, 0), (1, 2)):
        eq = equilibrium(lp, beta=2, tau=1e4, reference=ref, max_iter=256)
        assert int(np.argmax(eq.y)) == best
        assert eq.y[best] > 1 - 1e-9


def test_the_fixed_point_satisfies_the_rule():
    lp = random_members(4, 13, seed=5)
    log_ref = np.log(np.exp(lp).mean(axis=0))
    eq = equilibrium(lp, beta=3, tau=0.5, eta=0.5, max_iter=256, tol=1e-13)
    assert eq.converged
    w = influence_weights(eq.y, lp, 3)
    rhs = w @ lp + 0.5 * log_ref
    gap = eq.log_y - rhs
    assert np.ptp(gap) < 1e-9  # log y* = sum_i w_i(y*) l_i + tau log p_ref + const
    np.testing.assert_allclose(eq.weights, w, atol=1e-15)


def test_weights_and_every_iterate_are_distributions():
    lp = random_members(3, 17, seed=9)
    for max_iter in (1, 2, 5, 32):
        eq = equilibrium(lp, beta=5, tau=0.2, max_iter=max_iter)
        assert eq.y.min() >= 0 and eq.y.sum() == pytest.approx(1, abs=1e-12)
        assert eq.weights.min() >= 0 and eq.weights.sum() == pytest.approx(1, abs=1e-12)
        assert eq.iterations <= max_iter


def test_a_batch_of_positions_solves_each_position_as_alone():
    rng = np.random.default_rng(11)
    batch = log_softmax(rng.normal(size=(5, 3, 2, 6)) * 3)  # [B, T, M, V]
    together = equilibrium(batch, beta=4, tau=0.1, eta=0.3, tol=1e-6)
    for b in range(5):
        for t in range(3):
            alone = equilibrium(batch[b, t], beta=4, tau=0.1, eta=0.3, tol=1e-6)
            np.testing.assert_allclose(together.log_y[b, t], alone.log_y, atol=1e-13)
            assert together.iterations[b, t] == alone.iterations


def test_a_logit_offset_buys_a_member_no_influence():
    lp = random_members(2, 5, seed=2)
    shifted = lp + np.array([[100.0], [-3.0]])
    a, b = equilibrium(lp, beta=4), equilibrium(shifted, beta=4)
    np.testing.assert_allclose(a.log_y, b.log_y, atol=1e-12)
    np.testing.assert_allclose(a.weights, b.weights, atol=1e-12)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"beta": -1}, "kinetic.beta"),
        ({"tau": -0.1}, "kinetic.tau"),
        ({"eta": 0}, "kinetic.eta"),
        ({"eta": 1.5}, "kinetic.eta"),
        ({"max_iter": 0}, "kinetic.max_iter"),
        ({"max_iter": 257}, "kinetic.max_iter"),
        ({"tol": 0}, "kinetic.tol"),
        ({"reference": 2}, "kinetic.reference"),
        ({"reference": "median"}, "kinetic.reference"),
    ],
)
def test_each_control_out_of_range_is_refused_by_name(change, field):
    with pytest.raises(ValueError, match=field):
        Kinetic(**change).validate(members=2)


def test_a_council_needs_two_members():
    with pytest.raises(ValueError, match="kinetic.members"):
        Kinetic().validate(members=1)
