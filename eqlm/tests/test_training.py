"""Equilibrium training: it makes the map contract and fit, and a stopped run resumes to the same model."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from eqlm.model import EqLM  # noqa: E402
from eqlm.testing import tiny_config  # noqa: E402
from eqlm.training import TrainSettings, equilibrium_loss, train  # noqa: E402

TEXT = b"In the beginning God created the heaven and the earth. And the earth was without form, and void.\n" * 40


def non_contracting_tiny_model() -> EqLM:
    """A tiny EqLM whose block weights are scaled up so that plain iteration does not settle."""
    torch.manual_seed(0)
    model = EqLM(tiny_config())
    with torch.no_grad():
        for name, p in model.block.named_parameters():
            if name.endswith("weight") and p.dim() == 2:
                p.mul_(40.0)
    return model


def depth_metrics(model: EqLM, batch: torch.Tensor, depth: int) -> tuple[float, float]:
    out = model.solve(batch[:, :-1], max_iter=depth)
    ce = torch.nn.functional.cross_entropy(out.logits[depth].flatten(0, 1), batch[:, 1:].flatten()).item()
    return ce, out.residual.median().item()


@pytest.mark.slow  # trains for a few steps
def test_a_few_equilibrium_steps_lower_both_the_loss_and_the_residual():
    model = non_contracting_tiny_model()
    batch = torch.tensor([list(TEXT[:48]), list(TEXT[48:96])])
    ce_before, residual_before = depth_metrics(model, batch, 24)
    assert residual_before > 0.05, "the starting map should not have converged by depth 24"
    settings = TrainSettings(objective="equilibrium", anytime_depths=[4], grad_iters=2, jacobian_weight=0.5)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-3)
    gen = torch.Generator().manual_seed(0)
    for _ in range(40):
        loss, parts = equilibrium_loss(model, batch[:, :-1], batch[:, 1:], settings, 12, gen, False)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert {"d4", "eq", "res", "jac"} <= set(parts)
    ce_after, residual_after = depth_metrics(model, batch, 24)
    assert ce_after < ce_before * 0.8
    assert residual_after < residual_before * 0.5


TINY_RUN = {
    "objective": "equilibrium",
    "batch_size": 2,
    "seq_len": 32,
    "steps": 6,
    "warmup_steps": 2,
    "solve_depth_min": 3,
    "solve_depth_max": 6,
    "anytime_depths": [2],
    "jacobian_weight": 0.1,
    "random_init_prob": 0.5,
    "eval_bytes": 512,
    "threads": 1,
    "checkpoint_steps": 1,
}


def run_tiny(tmp_path, out: str, **overrides):
    """Train a tiny EqLM on a small repeated text into tmp_path/out (resuming what is there); the checkpoint's path."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(TEXT * 4)
    settings = TrainSettings(**{**TINY_RUN, **overrides})
    return train(tiny_config(max_positions=32), settings, tmp_path / out, corpus, log=lambda _: None)


@pytest.mark.slow
def test_a_stopped_run_resumes_to_the_same_model_as_an_uninterrupted_one(tmp_path):
    whole = run_tiny(tmp_path, "whole")
    run_tiny(tmp_path, "split", stop_after=3)
    resumed = run_tiny(tmp_path, "split")
    a = torch.load(whole, weights_only=True)
    b = torch.load(resumed, weights_only=True)
    assert a["provenance"]["steps"] == b["provenance"]["steps"] == 6
    assert a["provenance"]["run_hash"] == b["provenance"]["run_hash"]
    for key, value in a["state_dict"].items():
        assert torch.equal(value, b["state_dict"][key]), key
    for key in ("seed", "corpus_sha256", "config_hash", "git_commit", "train_settings"):
        assert key in b["provenance"]


@pytest.mark.slow
def test_a_resume_with_other_settings_is_refused(tmp_path):
    run_tiny(tmp_path, "run", stop_after=1)
    with pytest.raises(ValueError, match="belongs to another run"):
        run_tiny(tmp_path, "run", lr=1e-2)


def test_a_warm_start_solve_begins_each_position_at_its_predecessors_solved_state():
    """--warm-init trains the runtime's warm start: the no-gradient solve starts from the shifted solved states."""
    model = non_contracting_tiny_model()
    batch = torch.tensor([list(TEXT[:48])])
    settings = TrainSettings(objective="equilibrium", anytime_depths=[], grad_iters=1)
    cold, _ = equilibrium_loss(model, batch[:, :-1], batch[:, 1:], settings, 6, torch.Generator(), False)
    warm, parts = equilibrium_loss(model, batch[:, :-1], batch[:, 1:], settings, 6, torch.Generator(), False, 1.0, True)
    assert torch.isfinite(warm) and not torch.isclose(warm, cold)  # a different start on a map that has not settled
    warm.backward()
    assert all(p.grad is not None for p in model.block.parameters())


def test_runs_without_warm_init_keep_the_run_hash_they_had_before_it_existed():
    from eqlm.training import run_hash

    settings = TrainSettings(objective="equilibrium")
    assert run_hash(tiny_config(), settings, "sha") == "af2b0adae945a80c"  # computed by the code before the option
    warm = TrainSettings(objective="equilibrium", warm_init_prob=0.5)
    assert run_hash(tiny_config(), warm, "sha") != run_hash(tiny_config(), settings, "sha")


@pytest.mark.slow
@pytest.mark.parametrize("start", [{"warm_init_prob": 0.5}, {"settled_weight": 0.5}], ids=["warm-init", "settled-warm"])
def test_a_tiny_run_with_warm_starts_resumes_to_the_same_model(tmp_path, start):
    whole = run_tiny(tmp_path, "whole", grad_iters=2, **start)
    run_tiny(tmp_path, "split", grad_iters=2, stop_after=3, **start)
    resumed = run_tiny(tmp_path, "split", grad_iters=2, **start)
    a = torch.load(whole, weights_only=True)["state_dict"]
    b = torch.load(resumed, weights_only=True)["state_dict"]
    assert all(torch.equal(value, b[key]) for key, value in a.items())


def test_random_or_warm_starts_without_a_no_gradient_solve_are_refused(tmp_path):
    for starts in ({"random_init_prob": 0.5}, {"random_init_prob": 0.0, "warm_init_prob": 0.5}):
        with pytest.raises(ValueError, match="grad_iters > 0"):
            run_tiny(tmp_path, "run", grad_iters=0, **starts)


def test_settled_attention_is_what_a_warm_decoded_position_sees():
    """Block(settled=K/V of solved states) at position t equals one new position after a cache of those states."""
    from eqlm.testing import tiny_model

    model = tiny_model()
    ids = torch.tensor([list(TEXT[:24])])
    inj = model.embed(ids)
    solved = model.solve(ids, max_iter=12).z
    z = torch.randn_like(solved)
    settled = model.block.kv(solved)
    with torch.no_grad():
        batched, _, _ = model.block(z, inj, settled=settled)
        for t in (0, 5, 23):
            k, v = settled[0][:, :, :t], settled[1][:, :, :t]
            one, _, _ = model.block(z[:, t : t + 1], inj[:, t : t + 1], k, v)
            assert torch.allclose(batched[:, t : t + 1], one, atol=1e-5)
        # settled at the states themselves is plain causal attention
        same, _, _ = model.block(z, inj, settled=model.block.kv(z))
        plain, _, _ = model.block(z, inj)
    assert torch.allclose(same, plain, atol=1e-5)


def test_the_settled_warm_term_trains_the_warm_start_path():
    model = non_contracting_tiny_model()
    batch = torch.tensor([list(TEXT[:48])])
    settings = TrainSettings(objective="equilibrium", anytime_depths=[], grad_iters=1, settled_weight=1.0)
    cold, _ = equilibrium_loss(model, batch[:, :-1], batch[:, 1:], settings, 6, torch.Generator(), False)
    loss, parts = equilibrium_loss(
        model, batch[:, :-1], batch[:, 1:], settings, 6, torch.Generator(), False, 1.0, False, 4
    )
    assert {"warm", "wdist"} <= set(parts) and parts["wdist"] > 0
    assert torch.isclose(loss, cold + parts["warm"] + parts["wdist"], rtol=1e-4)
    loss.backward()
    assert all(p.grad is not None for p in model.block.parameters())


def test_runs_without_the_settled_warm_term_keep_their_run_hash(tmp_path):
    from eqlm.training import run_hash

    settings = TrainSettings(objective="equilibrium")
    assert run_hash(tiny_config(), settings, "sha") == "af2b0adae945a80c"
    settled = TrainSettings(objective="equilibrium", settled_weight=0.5)
    assert run_hash(tiny_config(), settled, "sha") != run_hash(tiny_config(), settings, "sha")
    with pytest.raises(ValueError, match="grad_iters > 0"):
        run_tiny(tmp_path, "run", grad_iters=0, settled_weight=0.5)


def test_a_deep_solves_last_step_probes_a_slower_direction_than_a_random_one():
    """The slow-mode penalty's probe: after a deep Picard solve the last update points along the map's
    slowest-contracting direction (power iteration). On the committed eqlm-demo, whose random-direction gain the
    Jacobian penalty holds near its target, the gain along that direction is several times larger."""
    from pathlib import Path

    from eqlm.checkpoint import load_checkpoint
    from eqlm.training import _gain

    root = Path(__file__).resolve().parents[2]
    model, _ = load_checkpoint(root / "inference" / "demo" / "eqlm-demo.pt")
    batch = torch.tensor([list((root / "inference" / "demo" / "heldout_slice.txt").read_bytes()[:256])])
    with torch.no_grad():
        inj = model.embed(batch)
        z = torch.zeros_like(inj)
        for _ in range(32):
            previous, (z, _, _) = z, model.block(z, inj)
        fz, _, _ = model.block(z, inj)
        slow = _gain(model, z, fz, inj, z - previous, 0.05).median()
        gen = torch.Generator().manual_seed(1)
        random = torch.stack([_gain(model, z, fz, inj, torch.randn(z.shape, generator=gen), 0.05) for _ in range(4)])
    assert slow > 3 * random.median()


def assert_the_term_enters_the_loss_and_the_gradient(grad_iters: int, part: str, **term) -> None:
    """With `term` switched on (and nothing else), the loss grows, `part` is logged, and the term has a gradient."""
    model = non_contracting_tiny_model()
    batch = torch.tensor([list(TEXT[:48])])
    plain = TrainSettings(objective="equilibrium", anytime_depths=[], grad_iters=grad_iters, residual_weight=0)
    with_term = TrainSettings(**{**plain.to_dict(), **term})
    base, _ = equilibrium_loss(model, batch[:, :-1], batch[:, 1:], plain, 6, torch.Generator(), False)
    loss, parts = equilibrium_loss(model, batch[:, :-1], batch[:, 1:], with_term, 6, torch.Generator(), False)
    assert part in parts and parts[part] > 0
    assert loss > base
    model.zero_grad()
    (loss - base).backward()
    assert model.block.fc1.weight.grad.abs().sum() > 0


def test_the_slow_mode_term_enters_the_loss_and_the_gradient_in_both_gradient_modes():
    for grad_iters in (0, 2):
        assert_the_term_enters_the_loss_and_the_gradient(grad_iters, "slow", slow_mode_weight=1.0, slow_mode_target=0.0)


def test_runs_without_the_slow_mode_term_keep_their_run_hash():
    from eqlm.training import run_hash

    settings = TrainSettings(objective="equilibrium")
    assert run_hash(tiny_config(), settings, "sha") == "af2b0adae945a80c"
    slow = TrainSettings(objective="equilibrium", slow_mode_weight=0.5)
    assert run_hash(tiny_config(), slow, "sha") != run_hash(tiny_config(), settings, "sha")


def test_the_early_gain_term_enters_the_loss_and_the_gradient_and_needs_the_no_gradient_solve(tmp_path):
    assert_the_term_enters_the_loss_and_the_gradient(2, "early", early_gain_weight=1.0, early_gain_target=0.0)
    with pytest.raises(ValueError, match="early-gain penalty"):
        run_tiny(tmp_path, "run", grad_iters=0, random_init_prob=0.0, early_gain_weight=0.5)


def test_the_early_gain_penalty_lowers_the_gain_at_the_first_iterates():
    """A few steps with only the early-gain term make the map's squared gain at z_1..z_3 smaller."""
    from eqlm.training import _gain

    torch.manual_seed(0)
    model = non_contracting_tiny_model()
    batch = torch.tensor([list(TEXT[i : i + 49]) for i in range(0, 4 * 49, 49)])
    settings = TrainSettings(
        objective="equilibrium",
        anytime_depths=[],
        grad_iters=1,
        residual_weight=0,
        early_gain_weight=1.0,
        early_gain_target=0.0,
    )

    def early_gain() -> float:
        with torch.no_grad():
            inj = model.embed(batch[:, :-1])
            z, gains = torch.zeros_like(inj), []
            for k in range(1, 5):
                previous, (z, _, _) = z, model.block(z, inj)
                if k > 1:
                    probe = torch.randn(previous.shape, generator=torch.Generator().manual_seed(k))
                    gains.append(_gain(model, previous, z, inj, probe, settings.jacobian_eps))
            return torch.stack(gains).mean().item()

    before = early_gain()
    opt = torch.optim.Adam(model.block.parameters(), lr=3e-3)
    plain = TrainSettings(**{**settings.to_dict(), "early_gain_weight": 0.0})
    for _ in range(20):
        loss, _ = equilibrium_loss(model, batch[:, :-1], batch[:, 1:], settings, 4, torch.Generator(), False)
        base, _ = equilibrium_loss(model, batch[:, :-1], batch[:, 1:], plain, 4, torch.Generator(), False)
        early_only = loss - base  # the same loss without the term: what is left is the term, with its gradient
        opt.zero_grad()
        early_only.backward()
        opt.step()
    assert early_gain() < 0.8 * before


def test_runs_without_the_early_gain_term_keep_their_run_hash():
    from eqlm.training import run_hash

    settings = TrainSettings(objective="equilibrium")
    assert run_hash(tiny_config(), settings, "sha") == "af2b0adae945a80c"
    early = TrainSettings(objective="equilibrium", early_gain_weight=0.5)
    assert run_hash(tiny_config(), early, "sha") != run_hash(tiny_config(), settings, "sha")


def gradient_cosine_to_a_deep_unroll(model: EqLM, batch: torch.Tensor, **settings) -> float:
    """Cosine between the parameters' gradient of `equilibrium_loss` (cross-entropy at the final state only) and the
    gradient of the same cross-entropy through 80 plain iterations from zero, all with gradient."""
    import torch.nn.functional as F

    def flat_grad(loss):
        model.zero_grad()
        loss.backward()
        return torch.cat([p.grad.flatten() for p in model.parameters()])

    deep = flat_grad(F.cross_entropy(model.unrolled(batch[:, :-1], [80])[80].flatten(0, 1), batch[:, 1:].flatten()))
    plain = TrainSettings(objective="equilibrium", anytime_depths=[], grad_iters=1, residual_weight=0, **settings)
    loss, _ = equilibrium_loss(model, batch[:, :-1], batch[:, 1:], plain, 79, torch.Generator(), False)
    return F.cosine_similarity(flat_grad(loss), deep, dim=0).item()


def test_the_implicit_gradient_is_close_to_the_gradient_through_a_deep_unroll_and_the_phantom_one_is_not():
    torch.manual_seed(0)
    model = EqLM(tiny_config())  # at initialisation the map settles, slowly: 80 iterations reach its fixed point
    batch = torch.randint(0, 256, (2, 33), generator=torch.Generator().manual_seed(1))
    phantom = gradient_cosine_to_a_deep_unroll(model, batch)
    implicit = gradient_cosine_to_a_deep_unroll(model, batch, implicit_iters=40)
    assert implicit > 0.95
    assert implicit > phantom + 0.2


def test_the_distillation_term_enters_the_loss_and_the_gradient():
    assert_the_term_enters_the_loss_and_the_gradient(2, "kd", distill_weight=1.0, distill_depth=2)


def test_the_implicit_gradient_and_distillation_need_the_no_gradient_solve(tmp_path):
    for term in ({"implicit_iters": 4}, {"distill_weight": 0.5}):
        with pytest.raises(ValueError, match="no-gradient solve"):
            run_tiny(tmp_path, "run", grad_iters=0, random_init_prob=0.0, **term)


@pytest.mark.parametrize("term", [{"implicit_iters": 8}, {"distill_weight": 0.5}], ids=["implicit", "distill"])
def test_runs_without_the_implicit_gradient_or_distillation_keep_their_run_hash(term):
    from eqlm.training import run_hash

    settings = TrainSettings(objective="equilibrium")
    assert run_hash(tiny_config(), settings, "sha") == "af2b0adae945a80c"
    assert run_hash(tiny_config(), TrainSettings(objective="equilibrium", **term), "sha") != "af2b0adae945a80c"


@pytest.mark.slow  # trains two tiny models
def test_an_outside_teacher_is_distilled_and_named_by_its_content_in_the_provenance(tmp_path):
    import hashlib

    from eqlm.checkpoint import load_checkpoint

    teacher = run_tiny(tmp_path, "teacher")
    student = run_tiny(tmp_path, "student", distill_weight=1.0, distill_depth=2, teacher_checkpoint=str(teacher))
    provenance = torch.load(student, weights_only=True)["provenance"]
    assert provenance["teacher_checkpoint_sha256"] == hashlib.sha256(teacher.read_bytes()).hexdigest()
    # the teacher's logits are the targets of the anytime iterates too: another teacher, another loss at depth 2 alone
    model, _ = load_checkpoint(student)
    batch = torch.tensor([list(TEXT[:33])])
    settings = TrainSettings(
        objective="equilibrium", anytime_depths=[2], grad_iters=1, distill_weight=1.0, distill_depth=2
    )
    losses = []
    for source in (teacher, student):
        other, _ = load_checkpoint(source)
        loss, parts = equilibrium_loss(
            model, batch[:, :-1], batch[:, 1:], settings, 4, torch.Generator(), False, 1.0, teacher_model=other
        )
        assert "kd" in parts
        losses.append(loss.item())
    assert losses[0] != losses[1]
    with pytest.raises(ValueError, match="teacher checkpoint needs"):
        run_tiny(tmp_path, "no-weight", teacher_checkpoint=str(teacher))
