"""The programme's solvers behave as its code defines them, its quirks included, and Broyden refuses to blow memory."""

import pytest
import torch

from eqlm.programme.solvers import anderson_joint, broyden, broyden_jacobian_bytes, picard


def affine(z: torch.Tensor) -> torch.Tensor:
    """f(z) = z / 2 + 1, whose fixed point is 2 everywhere."""
    return 0.5 * z + 1.0


def contraction():
    """A random linear contraction f(z) = A z + b on [1, 4, 8] states, and its fixed point."""
    torch.manual_seed(0)
    a = torch.randn(32, 32, dtype=torch.float64)
    a = 0.9 * a / torch.linalg.matrix_norm(a, ord=2)
    b = torch.randn(32, dtype=torch.float64)
    star = torch.linalg.solve(torch.eye(32, dtype=torch.float64) - a, b)

    def f(z):
        return (z.reshape(1, 32) @ a.T + b).reshape(1, 4, 8)

    return f, star.reshape(1, 4, 8)


def test_picard_runs_exactly_its_depth_with_no_tolerance():
    z, info = picard(affine, torch.zeros(1, 3), 3)
    assert torch.equal(z, torch.full((1, 3), 1.75))  # 0 -> 1 -> 1.5 -> 1.75
    assert info.iterations == 3 and not info.converged


def test_picard_stops_under_its_tolerance_and_answers_the_last_map_value():
    z, info = picard(affine, torch.zeros(1, 3), 100, tol=1e-3)
    assert info.converged and info.iterations < 100
    assert info.rel_residuals[-1] < 1e-3
    assert torch.allclose(z, torch.full((1, 3), 2.0), atol=1e-2)


def test_anderson_answers_its_last_mixed_iterate_when_capped():
    """Two iterations: a plain step to f(0) = 1, then the secant mix, which lands on the fixed point 2 exactly; the map
    value at that point would be f(1) = 1.5."""
    z, info = anderson_joint(affine, torch.zeros(1, 3), max_iter=2, tol=0.0)
    assert torch.allclose(z, torch.full((1, 3), 2.0), atol=1e-6)
    assert info.iterations == 2 and not info.converged


def test_anderson_answers_the_iterate_not_its_map_value_once_under_tolerance():
    """The programme's rule: when ||f(z) - z|| / ||f(z)|| < tol it returns z itself. From zero the first ratio is 1."""
    z, info = anderson_joint(affine, torch.zeros(1, 3), max_iter=12, tol=2.0)
    assert torch.equal(z, torch.zeros(1, 3))
    assert info.converged and info.iterations == 1


def test_anderson_reaches_a_linear_contractions_fixed_point_long_before_picard():
    f, star = contraction()
    z, info = anderson_joint(f, torch.zeros_like(star), max_iter=40, tol=1e-10)
    assert info.converged
    assert torch.allclose(z, star, atol=1e-8)
    _, slow = picard(f, torch.zeros_like(star), 40, tol=1e-10)
    assert info.iterations < slow.iterations


def test_anderson_keeps_at_most_m_iterates():
    """With m = 2 each mix is a secant step between two iterates; the solve still converges on a contraction."""
    f, star = contraction()
    z, info = anderson_joint(f, torch.zeros_like(star), max_iter=200, tol=1e-10, m=2)
    assert info.converged and torch.allclose(z, star, atol=1e-8)


def test_broyden_reaches_a_linear_contractions_fixed_point():
    f, star = contraction()
    z, info = broyden(f, torch.zeros_like(star), max_iter=100, tol=1e-10)
    assert info.converged
    assert torch.allclose(z, star, atol=1e-8)


def test_broyden_refuses_a_dense_jacobian_over_its_memory_limit():
    z0 = torch.zeros(1, 128, 768)  # GPT-2 width at the published context: (128 * 768)^2 floats = 38.7 GB
    assert broyden_jacobian_bytes(z0) == (128 * 768) ** 2 * 4
    with pytest.raises(ValueError, match=r"dense inverse Jacobian of \(T\*d\)\^2 floats.*over the limit"):
        broyden(affine, z0, max_iter=12, tol=1e-3)
    with pytest.raises(ValueError, match="over the limit of 1000 bytes"):
        broyden(affine, torch.zeros(1, 4, 8), max_iter=12, tol=1e-3, max_bytes=1000)


@pytest.mark.parametrize("solver", [picard, anderson_joint])
def test_a_solver_needs_an_iteration(solver):
    with pytest.raises(ValueError, match="at least one iteration"):
        solver(affine, torch.zeros(1, 3), 0) if solver is picard else solver(affine, torch.zeros(1, 3), 0, 0.0)
