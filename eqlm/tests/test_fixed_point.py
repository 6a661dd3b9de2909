"""The one fixed-point iteration: its numpy and torch twins agree on random maps, and halting freezes a position."""

import numpy as np
import pytest
import torch

from eqlm.fixed_point import (
    FixedPoint,
    NumpyAnderson,
    NumpyOps,
    TorchAnderson,
    TorchOps,
    halting_rule,
    iterate,
    iterates,
    kl_below,
)
from eqlm.limits import SOLVERS

B, T, D = 2, 5, 16


def random_map(seed: int, dtype=np.float64):
    """f(z) = tanh(z W + x) per position (a contraction), with its numpy and torch steps (f(z), relative residual)."""
    rng = np.random.default_rng(seed)
    w = (rng.normal(size=(D, D)) * 0.9 / np.sqrt(D)).astype(dtype)
    x = rng.normal(size=(B, T, D)).astype(dtype)
    # positions start at different distances from the fixed point, so they halt at different iterations
    z0 = (rng.normal(size=(B, T, 1)) * rng.normal(size=(B, T, D))).astype(dtype)

    def numpy_step(z, _):
        fz = np.tanh(z @ w + x)
        return fz, np.linalg.norm(fz - z, axis=-1) / (np.linalg.norm(z, axis=-1) + 1e-6)

    wt, xt = torch.from_numpy(w), torch.from_numpy(x)

    def torch_step(z, _):
        fz = torch.tanh(z @ wt + xt)
        return fz, (fz - z).norm(dim=-1) / (z.norm(dim=-1) + 1e-6)

    return z0, numpy_step, torch_step


def run_both(seed, solver, tol, max_iter=30, dtype=np.float64, anderson_dtype=None):
    z0, numpy_step, torch_step = random_map(seed, dtype)
    runs = []
    for step, ops, z in (
        (numpy_step, NumpyOps(), z0),
        (torch_step, TorchOps(anderson_dtype=anderson_dtype), torch.from_numpy(z0)),
    ):
        solve = FixedPoint(step, z, max_iter, ops=ops, solver=solver, tol=tol)
        history = [np.asarray(solve.step_residual).copy() for _ in solve]
        runs.append((solve, history))
    return runs


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("tol", [None, 1e-4])
@pytest.mark.parametrize("solver", SOLVERS)
def test_numpy_and_torch_twins_agree_on_random_maps_in_float64(solver, tol, seed):
    (np_solve, np_history), (t_solve, t_history) = run_both(seed, solver, tol)
    assert np_solve.count == t_solve.count == len(np_history) == len(t_history)
    np.testing.assert_array_equal(np_solve.iterations, t_solve.iterations.numpy())
    np.testing.assert_allclose(np_solve.z, t_solve.z.numpy(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(np_solve.residual, t_solve.residual.numpy(), rtol=1e-9, atol=1e-14)
    for a, b in zip(np_history, t_history, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-14)


@pytest.mark.parametrize("solver", SOLVERS)
def test_the_twins_agree_in_float32_as_the_onnx_decoder_and_the_torch_measurements_run_them(solver):
    # the decoder runs NumpyAnderson on float32 states; convergence.TorchBackend runs TorchAnderson in float64
    (np_solve, _), (t_solve, _) = run_both(3, solver, None, max_iter=12, dtype=np.float32, anderson_dtype=torch.float64)
    assert np_solve.z.dtype == np.float32 and t_solve.z.dtype == torch.float32
    np.testing.assert_allclose(np_solve.z, t_solve.z.numpy(), rtol=0, atol=1e-5)


def test_anderson_twins_give_the_same_mix_of_random_iterates():
    rng = np.random.default_rng(7)
    numpy_anderson, torch_anderson = NumpyAnderson(m=3), TorchAnderson(m=3)
    for _ in range(6):  # past the memory, so the window slides
        x, fx = rng.normal(size=(B, T, D)), rng.normal(size=(B, T, D))
        got = torch_anderson.update(torch.from_numpy(x), torch.from_numpy(fx)).numpy()
        np.testing.assert_allclose(numpy_anderson.update(x, fx), got, rtol=0, atol=1e-10)


@pytest.mark.parametrize("ops", [NumpyOps(), TorchOps()], ids=["numpy", "torch"])
def test_anderson_iterates_as_picard_for_its_picard_first_iterations_then_mixes(ops):
    z0, numpy_step, torch_step = random_map(5)
    step, z = (numpy_step, z0) if isinstance(ops, NumpyOps) else (torch_step, torch.from_numpy(z0))

    def states(solver, **options):
        solve = FixedPoint(step, z, 8, ops=ops, solver=solver, **options)
        return [np.asarray(solve.z).copy() for _ in solve]

    picard, anderson = states("picard"), states("anderson", anderson_picard_first=4)
    for i in range(4):
        np.testing.assert_array_equal(anderson[i], picard[i])
    assert not np.allclose(anderson[5], picard[5])  # the mix starts at the 5th update, from its 2nd remembered step


def test_a_halted_position_stays_frozen_and_keeps_its_count_and_last_residual():
    z0, numpy_step, _ = random_map(4)
    solve = FixedPoint(numpy_step, z0, 40, ops=NumpyOps(), tol=1e-3)
    frozen = {}
    for i in solve:
        for pos in zip(*np.nonzero(~solve.active), strict=True):
            frozen.setdefault(pos, (i, solve.z[pos].copy(), solve.residual[pos]))
        for pos, (_, state, _) in frozen.items():
            np.testing.assert_array_equal(solve.z[pos], state)
    assert len(set(solve.iterations.ravel())) > 1  # positions halted at different iterations
    assert solve.count == solve.iterations.max() < 40  # the loop ends once every position has halted
    for pos, (i, _, residual) in frozen.items():
        assert solve.iterations[pos] == i and solve.residual[pos] == residual < 1e-3


def test_without_a_rule_every_position_runs_every_iteration():
    z0, numpy_step, _ = random_map(5)
    solve = FixedPoint(numpy_step, z0, 7, ops=NumpyOps()).run()
    assert solve.count == 7 and (solve.iterations == 7).all() and solve.active.all()


def test_a_halting_rule_plugs_in_and_sees_each_iterations_states():
    z0, numpy_step, _ = random_map(6)
    seen = []

    def small_move(residual, before, after):  # the shape of a later KL rule: it reads the states itself
        seen.append(before.shape)
        return np.abs(after - before).max(axis=-1) < 1e-3

    solve = FixedPoint(numpy_step, z0, 50, ops=NumpyOps(), halt=small_move).run()
    assert seen and all(shape == (B, T, D) for shape in seen)
    assert not solve.active.any() and solve.count < 50


def test_an_unknown_solver_and_two_halting_rules_are_refused():
    z0, numpy_step, _ = random_map(0)
    with pytest.raises(ValueError, match="unknown solver 'newton'"):
        FixedPoint(numpy_step, z0, 4, ops=NumpyOps(), solver="newton")
    with pytest.raises(ValueError, match="not both"):
        FixedPoint(numpy_step, z0, 4, ops=NumpyOps(), tol=1e-3, halt=lambda r, before, after: r < 1e-3)


V = 11  # a random head's vocabulary for the KL rule


def random_head(seed: int):
    """A linear head z -> logits [..., V], numpy and torch."""
    h = np.random.default_rng(100 + seed).normal(size=(D, V)) * 2.0
    ht = torch.from_numpy(h)
    return (lambda z: z @ h.astype(z.dtype)), (lambda z: z @ ht.to(z.dtype))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("solver", SOLVERS)
def test_the_kl_rule_halts_the_same_positions_at_the_same_iterations_in_both_twins(solver, seed):
    z0, numpy_step, torch_step = random_map(seed)
    numpy_head, torch_head = random_head(seed)
    runs = []
    for step, head, ops, z in (
        (numpy_step, numpy_head, NumpyOps(), z0),
        (torch_step, torch_head, TorchOps(), torch.from_numpy(z0)),
    ):
        rule = halting_rule("kl", 1e-6, head, ops)
        runs.append(FixedPoint(step, z, 40, ops=ops, solver=solver, halt=rule).run())
    np_solve, t_solve = runs
    assert np_solve.count == t_solve.count < 40
    np.testing.assert_array_equal(np_solve.iterations, t_solve.iterations.numpy())
    assert len(set(np_solve.iterations.ravel())) > 1  # positions halted at different iterations
    np.testing.assert_allclose(np_solve.z, t_solve.z.numpy(), rtol=0, atol=1e-12)


def test_a_position_halts_at_the_first_iteration_whose_kl_to_the_previous_distribution_is_below_tol():
    z0, numpy_step, _ = random_map(4)
    head, _ = random_head(4)
    calls = []

    def counted_head(z):
        calls.append(1)
        return head(z)

    tol = 1e-5
    solve = FixedPoint(numpy_step, z0, 60, ops=NumpyOps(), halt=kl_below(tol, counted_head, NumpyOps()))
    states = [z0] + [solve.z.copy() for _ in solve]
    assert len(calls) == solve.count + 1  # the head runs once per iteration (and once on the start)

    def log_softmax(x):
        x = x - x.max(axis=-1, keepdims=True)
        return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))

    # the free run of the same map: a halted position's state is frozen in `states`, so recompute it unfrozen
    free = [z0]
    for _ in range(solve.count):
        free.append(numpy_step(free[-1], 0)[0])
    lp = [log_softmax(head(z)) for z in free]
    kl = np.stack([(np.exp(lp[i]) * (lp[i] - lp[i - 1])).sum(-1) for i in range(1, len(lp))])  # [iterations, B, T]
    below = kl < tol
    first = below.argmax(axis=0) + 1
    np.testing.assert_array_equal(solve.iterations, first)
    assert below.any(axis=0).all()
    for b, t in np.ndindex(B, T):
        np.testing.assert_array_equal(states[-1][b, t], free[first[b, t]][b, t])


def test_a_halting_rule_is_named_and_none_without_a_tol():
    _, head = random_head(0)
    assert halting_rule("kl", None, head, TorchOps()) is None
    assert halting_rule("residual", None, head, TorchOps()) is None
    with pytest.raises(ValueError, match="halt must be 'residual' or 'kl'"):
        halting_rule("entropy", 1e-3, head, TorchOps())


def test_iterates_is_the_plain_loop_on_both_backends_with_gradients_through_every_step():
    z0, numpy_step, _ = random_map(3)
    w = torch.from_numpy(np.random.default_rng(4).normal(size=(D, D)) * 0.3).requires_grad_()

    def f(z):
        return torch.tanh(z @ w)

    expected, states = torch.from_numpy(z0), {}
    for i in range(1, 6):
        expected = f(expected)
        states[i] = expected
    seen = dict(iterates(f, torch.from_numpy(z0), 5))
    assert list(seen) == [1, 2, 3, 4, 5]
    assert all(torch.equal(seen[i], states[i]) for i in states)
    seen[5].sum().backward()
    assert w.grad is not None and w.grad.abs().sum() > 0
    plain = z0
    for _ in range(4):
        plain = numpy_step(plain, 0)[0]
    assert np.array_equal(iterate(lambda z: numpy_step(z, 0)[0], z0, 4), plain)
    assert iterate(f, z0, 0) is z0
