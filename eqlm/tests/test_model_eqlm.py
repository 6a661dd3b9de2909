"""EqLM in torch: anytime outputs, residuals, halting, Anderson, warm start, and the explicit stack."""

import pytest
import torch

from eqlm.model import EqLM, EqLMConfig, ExplicitLM, build_model
from eqlm.testing import tiny_config, tiny_model


@pytest.fixture(scope="module")
def model():
    return tiny_model()


@pytest.fixture(scope="module")
def ids():
    torch.manual_seed(1)
    return torch.randint(0, 256, (2, 24))


def test_outputs_exist_at_every_requested_iteration_count(model, ids):
    out = model.solve(ids, max_iter=12, depths=[1, 4, 8, 12])
    assert sorted(out.logits) == [1, 4, 8, 12]
    assert out.logits[4].shape == (2, 24, 256)
    assert not torch.allclose(out.logits[1], out.logits[12])
    assert len(out.residual_history) == 12


def test_anytime_logits_match_the_unrolled_training_path(model, ids):
    with torch.no_grad():
        unrolled = model.unrolled(ids, [3, 7])
    solved = model.solve(ids, max_iter=7, depths=[3, 7])
    for d in (3, 7):
        assert torch.allclose(unrolled[d], solved.logits[d], atol=1e-5)


def test_model_is_causal(model, ids):
    changed = ids.clone()
    changed[:, 15:] = (changed[:, 15:] + 1) % 256
    a = model.solve(ids, max_iter=6).logits[6]
    b = model.solve(changed, max_iter=6).logits[6]
    assert torch.allclose(a[:, :15], b[:, :15], atol=1e-6)
    assert not torch.allclose(a[:, 15:], b[:, 15:])


def test_relative_residual_is_recorded_per_iteration_and_shrinks(model, ids):
    out = model.solve(ids, max_iter=30)
    first, last = out.residual_history[1].mean(), out.residual_history[-1].mean()
    assert last < first


def test_adaptive_halting_mean_iterations_below_cap_and_residuals_below_tol_or_at_cap(model, ids):
    tol, cap = 0.05, 40
    out = model.solve(ids, max_iter=cap, tol=tol)
    assert out.iterations.float().mean() < cap
    assert bool(((out.residual < tol) | (out.iterations == cap)).all())
    assert out.iterations.min() >= 1


@pytest.mark.slow  # trains / solves to a tight tolerance
def test_anderson_reaches_a_tolerance_with_fewer_iterations_than_picard(model, ids):
    picard = model.solve(ids, max_iter=60, tol=1e-3)
    anderson = model.solve(ids, max_iter=60, tol=1e-3, solver="anderson")
    assert anderson.iterations.float().mean() < picard.iterations.float().mean()
    assert bool((anderson.residual < 1e-3).all())


def test_warm_start_from_a_nearby_state_needs_fewer_iterations(model, ids):
    cold = model.solve(ids, max_iter=60, tol=1e-3)
    warm = model.solve(ids, max_iter=60, tol=1e-3, z0=cold.z + 1e-4 * torch.randn_like(cold.z))
    assert warm.iterations.float().mean() < cold.iterations.float().mean() / 2


def test_unknown_solver_is_refused(model, ids):
    with pytest.raises(ValueError):
        model.solve(ids, solver="newton")


def test_the_explicit_baseline_is_a_causal_stack_of_distinct_layers_that_embeds_its_input_once():
    cfg = tiny_config(n_layers=3)
    explicit = ExplicitLM(cfg)
    assert len(explicit.layers) == 3
    assert explicit.layers[0].qkv.weight.data_ptr() != explicit.layers[1].qkv.weight.data_ptr()
    assert explicit.num_params() > EqLM(cfg).num_params()
    ids = torch.randint(0, 256, (1, 10))
    logits = explicit(ids)
    assert logits.shape == (1, 10, 256)
    changed = ids.clone()
    changed[0, 6] = (changed[0, 6] + 1) % 256
    assert torch.equal(explicit(changed)[:, :6], logits[:, :6])  # causal
    with pytest.raises(ValueError, match="layer count"):
        explicit(ids, depth=2)


def test_the_explicit_baseline_decodes_over_its_cache_as_it_runs_the_whole_sequence():
    explicit = ExplicitLM(tiny_config(n_layers=3)).eval()
    ids = torch.randint(0, 256, (2, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        whole = explicit(ids)
        caches = [None] * 3
        stepped = []
        for t in range(ids.shape[1]):
            x = explicit.embed(ids[:, t : t + 1], torch.full_like(ids[:, t : t + 1], t))
            for i, layer in enumerate(explicit.layers):
                past = caches[i] or (None, None)
                x, k, v = layer(x, *past)
                caches[i] = (k, v) if past[0] is None else (torch.cat([past[0], k], 2), torch.cat([past[1], v], 2))
            stepped.append(explicit.head(x))
    assert torch.allclose(whole, torch.cat(stepped, dim=1), atol=1e-5)


def test_build_model_rejects_unknown_classes_and_keys():
    with pytest.raises(ValueError):
        build_model("GPT", EqLMConfig().to_dict())
    with pytest.raises(ValueError):
        build_model("EqLM", {"d_model": 32, "surprise": 1})


@pytest.mark.slow  # trains / solves to a tight tolerance
def test_the_unrolled_anytime_loss_decreases_on_a_repeated_batch():
    from pathlib import Path

    from eqlm.objective import StepDraws, forward_step
    from eqlm.recipe import Recipe

    torch.manual_seed(0)
    model = EqLM(tiny_config())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    batch = torch.tensor([list(b"In the beginning God created the heaven and the earth.")])
    raw = {
        "stages": {"s": {"steps": 1, "solve": {"kind": "unrolled"}, "terms": {"anytime_ce": {"depths": [4, 8, 12]}}}}
    }
    stage = Recipe("unrolled", Path("u.toml"), raw).resolve().data
    losses = []
    for _ in range(15):
        loss, parts = forward_step(model, batch[:, :-1], batch[:, 1:], stage, StepDraws(12), torch.Generator())
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert sorted(parts) == ["d12", "d4", "d8"]
    assert losses[-1] < losses[0] * 0.8
