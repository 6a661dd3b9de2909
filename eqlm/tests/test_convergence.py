"""Quality and convergence by depth (eqlm.convergence): the maths, and torch and ONNX measuring the same figures."""

import numpy as np
import pytest

from eqlm import convergence as cv
from eqlm.decoder import OnnxEqLM
from eqlm.testing import tiny_model
from eqlm.units import LN2, mean_bits

TEXT = (
    b"In the beginning God created the heaven and the earth. And the earth was without form, and void; "
    b"and darkness was upon the face of the deep. And the Spirit of God moved upon the face of the waters. "
) * 4


@pytest.fixture(scope="module")
def windows():
    return cv.windows_of(TEXT, 64, limit=6)


def test_converged_fraction_and_quantiles_of_known_residuals():
    r = np.array([0.001, 0.005, 0.02, 0.5], dtype=np.float32)
    assert cv.converged_fraction(r, 0.01) == 0.5
    assert cv.converged_fraction(r, 0.0001) == 0.0
    q = cv.residual_quantiles(r)
    assert q[0.5] == pytest.approx((0.005 + 0.02) / 2, rel=1e-6)
    assert 0.02 < q[0.95] < 0.5


def test_nll_from_logits_is_cross_entropy_in_nats():
    logits = np.log(np.array([[0.5, 0.25, 0.25]]))
    assert cv.nll_from_logits(logits, np.array([0]))[0] == pytest.approx(np.log(2))
    assert mean_bits(cv.nll_from_logits(logits, np.array([1]))) == pytest.approx(2.0)


def test_matched_fixed_depth_interpolates_between_measured_depths():
    curve = {1: 4.0, 2: 3.0, 4: 2.0}
    assert cv.matched_fixed_depth(curve, 1.5) == pytest.approx(3.5)
    assert cv.matched_fixed_depth(curve, 3.0) == pytest.approx(2.5)
    assert cv.matched_fixed_depth(curve, 9.0) == pytest.approx(2.0)


def test_windows_leave_out_the_incomplete_tail():
    w = cv.windows_of(b"abcdefghij", 4)
    assert w.shape == (2, 4) and bytes(w[1].astype(np.uint8)) == b"efgh"


# Anderson's least-squares step amplifies float rounding on a random (non-contracting) map, so the two
# backends' Anderson iterates agree tightly for the first depths only; Picard's agree at every depth.
@pytest.mark.parametrize(("solver", "tight_until", "rel"), [("picard", 16, 1e-4), ("anderson", 8, 2e-3)])
@pytest.mark.slow  # 16 depths on two backends
def test_torch_and_onnx_measure_the_same_quality_and_convergence(tiny_onnx_dir, windows, solver, tight_until, rel):
    torch_profile = cv.profile_by_depth(cv.TorchBackend(tiny_model()), windows, solver, max_depth=16, batch=4)
    onnx_profile = cv.profile_by_depth(cv.OnnxBackend(OnnxEqLM(tiny_onnx_dir)), windows, solver, max_depth=16, batch=4)
    for depth in range(1, 17):
        a, b = torch_profile.by_depth[depth], onnx_profile.by_depth[depth]
        assert a.positions == b.positions == 6 * 63
        assert a.bits_per_byte == pytest.approx(b.bits_per_byte, abs=5e-4)
        if depth > tight_until:
            continue
        assert a.residual_median == pytest.approx(b.residual_median, rel=rel)
        assert a.residual_p95 == pytest.approx(b.residual_p95, rel=rel)
        for tol, share in a.converged.items():
            assert share == pytest.approx(b.converged[tol], abs=2 / a.positions)  # at most a rounding-edge pair


def test_torch_and_onnx_agree_on_adaptive_halting(tiny_onnx_dir, windows):
    curve = {1: 9.0, 64: 1.0}
    a = cv.adaptive_point(cv.TorchBackend(tiny_model()), windows, 0.05, cap=24, fixed_curve=curve)
    b = cv.adaptive_point(cv.OnnxBackend(OnnxEqLM(tiny_onnx_dir)), windows, 0.05, cap=24, fixed_curve=curve)
    assert a.mean_iterations == pytest.approx(b.mean_iterations, abs=0.02)
    assert a.bits_per_byte == pytest.approx(b.bits_per_byte, abs=1e-3)
    assert 1 <= a.mean_iterations <= 24 and 0 <= a.halted_fraction <= 1
    assert a.matched_bits_per_byte == pytest.approx(cv.matched_fixed_depth(curve, a.mean_iterations))


def test_adaptive_halting_matches_the_models_own_solver(windows):
    import torch

    model = tiny_model()
    point = cv.adaptive_point(cv.TorchBackend(model), windows, 0.05, cap=24, batch=len(windows))
    solved = model.solve(torch.as_tensor(windows[:, :-1]), max_iter=24, tol=0.05)
    assert point.mean_iterations == pytest.approx(float(solved.iterations.double().mean()), abs=1e-9)
    nll = torch.nn.functional.cross_entropy(
        solved.logits[24].flatten(0, 1).double(), torch.as_tensor(windows[:, 1:]).flatten()
    )
    assert point.bits_per_byte == pytest.approx(float(nll) / LN2, abs=1e-5)


def test_adaptive_points_of_disjoint_parts_merge_to_one_pass(windows):
    backend = cv.TorchBackend(tiny_model())
    curve = {1: 9.0, 64: 1.0}
    whole = cv.adaptive_point(backend, windows, 0.05, cap=24, batch=2, fixed_curve=curve)
    parts = [cv.adaptive_point(backend, windows[i : i + n], 0.05, cap=24, batch=2) for i, n in ((0, 4), (4, 2))]
    merged = cv.merge_points(parts, fixed_curve=curve)
    assert merged.positions == whole.positions and (merged.solver, merged.tol, merged.cap) == ("picard", 0.05, 24)
    for name in ("mean_iterations", "bits_per_byte", "halted_fraction", "matched_bits_per_byte"):
        assert getattr(merged, name) == pytest.approx(getattr(whole, name), rel=1e-9), name
    assert cv.merge_points(parts).matched_bits_per_byte is None  # no curve, no match to claim
    with pytest.raises(ValueError, match="share its solver, tol and cap"):
        cv.merge_points([parts[0], cv.adaptive_point(backend, windows[4:], 0.05, cap=12)])


def test_fixed_depth_profile_matches_the_runtimes_bits_per_byte(tiny_onnx_dir):
    from eqlm.scoring import bits_per_byte

    model = OnnxEqLM(tiny_onnx_dir)
    profile = cv.profile_by_depth(cv.OnnxBackend(model), cv.windows_of(TEXT, 64), max_depth=8)
    expected = bits_per_byte(model, TEXT, [2, 8], window=64)
    assert profile.by_depth[2].bits_per_byte == pytest.approx(expected[2], abs=1e-9)
    assert profile.by_depth[8].bits_per_byte == pytest.approx(expected[8], abs=1e-9)
