"""Training from recipe files: the terms fit and contract the map, runs resume exactly, recipes are checked."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from eqlm.model import EqLM  # noqa: E402
from eqlm.objective import StepDraws, forward_step  # noqa: E402
from eqlm.recipe import Recipe, RecipeError  # noqa: E402
from eqlm.testing import tiny_config  # noqa: E402
from eqlm.trainer import train_stage  # noqa: E402

from .tiny_training import ROOT, TEXT, TINY_TERMS, digest, tiny_recipe  # noqa: E402


def stage_of(solve: dict | None = None, terms: dict | None = None, **top):
    """A resolved stage of the tiny model with the given solve and terms (for loss-level tests)."""
    raw = {
        "model": {"d_model": 32, "n_heads": 4, "d_mlp": 64, "max_positions": 64},
        "stages": {"s": {"steps": 1, **top, "solve": solve or {}, "terms": terms or TINY_TERMS}},
    }
    return Recipe("test", Path("test.toml"), raw).resolve()


def train_tiny(tmp_path, out: str, stage: str = "first", **options):
    return train_stage(
        tiny_recipe(tmp_path).resolve(stage),
        tmp_path / out,
        log=lambda _: None,
        checkpoint_steps=1,
        eval_bytes=512,
        **options,
    )


def non_contracting_tiny_model() -> EqLM:
    """A tiny EqLM whose block weights are scaled up so that plain iteration does not settle."""
    torch.manual_seed(0)
    model = EqLM(tiny_config())
    with torch.no_grad():
        for name, p in model.block.named_parameters():
            if name.endswith("weight") and p.dim() == 2:
                p.mul_(40.0)
    return model


def loss_of(model, batch, stage, depth, noise=False, warm=False, term_draws=None, teacher=None):
    draws = StepDraws(depth, noise, warm, term_draws or {})
    return forward_step(model, batch[:, :-1], batch[:, 1:], stage.data, draws, torch.Generator(), 1.0, teacher)


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
    stage = stage_of(
        {"grad_iters": 2},
        {
            "final_ce": {"weight": 0.5},
            "anytime_ce": {"weight": 0.5, "depths": [4]},
            "residual": {},
            "jacobian": {"weight": 0.5},
        },
    )
    opt = torch.optim.AdamW(model.parameters(), lr=5e-3)
    for _ in range(40):
        loss, parts = loss_of(model, batch, stage, 12)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert {"d4", "eq", "res", "jac"} <= set(parts)
    ce_after, residual_after = depth_metrics(model, batch, 24)
    assert ce_after < ce_before * 0.8
    assert residual_after < residual_before * 0.5


@pytest.mark.slow
def test_a_tiny_recipe_stopped_and_resumed_trains_the_same_model_as_an_uninterrupted_run(tmp_path):
    whole = train_tiny(tmp_path, "whole")
    stopped = train_tiny(tmp_path, "split", stop_after=3)
    assert not stopped.finished and stopped.step == 3 and stopped.checkpoint is None
    resumed = train_tiny(tmp_path, "split")
    assert whole.finished and resumed.finished
    a, b = torch.load(whole.checkpoint, weights_only=True), torch.load(resumed.checkpoint, weights_only=True)
    assert a["provenance"]["steps"] == b["provenance"]["steps"] == 6
    assert a["provenance"]["run_hash"] == b["provenance"]["run_hash"]
    for key, value in a["state_dict"].items():
        assert torch.equal(value, b["state_dict"][key]), key
    for key in ("seed", "corpus_sha256", "config_hash", "git_commit", "recipe", "recipe_hash", "resolved_stage"):
        assert key in b["provenance"]
    assert b["provenance"]["resolved_stage"]["terms"]["jacobian"]["weight"] == 0.1


@pytest.mark.slow
def test_a_resume_with_another_recipe_or_other_threads_is_refused(tmp_path):
    recipe = tiny_recipe(tmp_path)
    train_stage(recipe.resolve("first"), tmp_path / "run", stop_after=1, log=lambda _: None)
    with pytest.raises(ValueError, match="belongs to another run"):
        train_stage(recipe.resolve("first", ["schedule.lr=1e-2"]), tmp_path / "run", log=lambda _: None)
    with pytest.raises(ValueError, match="threads"):
        train_stage(recipe.resolve("first"), tmp_path / "run", threads=2, log=lambda _: None)


@pytest.mark.slow
def test_a_finished_stage_is_taken_as_finished_whatever_it_ran_on_but_an_unfinished_one_keeps_its_identity(tmp_path):
    recipe = tiny_recipe(tmp_path)
    train_stage(recipe.resolve("first"), tmp_path / "done", log=lambda _: None)  # every step, on one thread
    again = train_stage(recipe.resolve("first"), tmp_path / "done", threads=2, log=lambda _: None)
    assert again.finished and again.step == 6 and again.checkpoint == tmp_path / "done" / "latest.pt"
    train_stage(recipe.resolve("first"), tmp_path / "half", stop_after=3, log=lambda _: None)
    with pytest.raises(ValueError, match="threads"):
        train_stage(recipe.resolve("first"), tmp_path / "half", threads=2, log=lambda _: None)


def test_a_saved_training_state_holds_cpu_tensors_so_it_loads_on_any_machine():
    from eqlm.train_state import _cpu

    tree = {"a": torch.ones(2), "b": [torch.zeros(1), 3], "c": (torch.ones(1),)}
    moved = _cpu(tree)
    assert moved["a"].device.type == "cpu" and moved["b"][1] == 3 and isinstance(moved["c"], tuple)


@pytest.mark.slow
def test_a_stage_chain_trains_each_stage_from_the_one_before(tmp_path):
    from eqlm.trainer import train_chain

    recipe = tiny_recipe(tmp_path)
    assert recipe.chain() == ["first", "second"]
    assert recipe.resolve("second").from_stage == "first"
    with pytest.raises(ValueError, match="starts from stage first"):
        train_stage(recipe.resolve("second"), tmp_path / "alone", log=lambda _: None)
    outcome = train_chain(recipe, tmp_path / "chain", log=lambda _: None, eval_bytes=512)
    first = tmp_path / "chain" / "first" / "latest.pt"
    provenance = torch.load(outcome.checkpoint, weights_only=True)["provenance"]
    assert provenance["stage"] == "second" and provenance["steps"] == 4
    assert provenance["init_checkpoint_sha256"] == hashlib.sha256(first.read_bytes()).hexdigest()
    assert provenance["resolved_stage"]["terms"]["progressive"] == {"weight": 0.5, "max_iters": 6}
    # run again: both stages are found finished and nothing trains
    again = train_chain(recipe, tmp_path / "chain", log=lambda _: None, eval_bytes=512)
    assert again.checkpoint == outcome.checkpoint and digest(again.checkpoint) == digest(outcome.checkpoint)


@pytest.mark.slow
def test_a_chains_checkpoints_give_the_card_facts_of_each_stage_as_recorded(tmp_path):
    from eqlm.card_facts import build_facts, read_record
    from eqlm.trainer import train_chain

    recipe = tiny_recipe(tmp_path)
    outcome = train_chain(recipe, tmp_path / "chain", log=lambda _: None, eval_bytes=512)
    first = read_record(tmp_path / "chain" / "first" / "latest.pt", tmp_path)
    facts = build_facts("tiny", read_record(outcome.checkpoint, tmp_path), recipe, [first])
    stages = {s["name"]: s["recorded"] for s in facts["stages"]}
    assert facts["served"]["stage"] == "second" and stages["first"]["checkpoint"] == "chain/first/latest.pt"
    assert stages["second"]["continues"] == "first" and stages["second"]["provenance_shape"] == "recipe"
    assert (stages["first"]["steps"], stages["first"]["bytes_seen"]) == (6, 6 * 2 * 32)
    assert stages["second"]["recipe_changed"] is False and len(stages["second"]["run_hash"]) == 16
    assert facts["totals"]["recorded_steps"] == 10 and facts["totals"]["unrecorded"] == []
    assert "progressive (max_iters 6) (weight 0.5)" in facts["stages"][1]["objective"]


def test_a_warm_start_solve_begins_each_position_at_its_predecessors_solved_state():
    model = non_contracting_tiny_model()
    batch = torch.tensor([list(TEXT[:48])])
    stage = stage_of({"grad_iters": 1}, {"final_ce": {}})
    cold, _ = loss_of(model, batch, stage, 6)
    warm, _ = loss_of(model, batch, stage, 6, warm=True)
    assert torch.isfinite(warm) and not torch.isclose(warm, cold)  # a different start on a map that has not settled
    warm.backward()
    assert all(p.grad is not None for p in model.block.parameters())


def test_random_or_warm_starts_without_a_no_gradient_solve_are_refused():
    for start in ({"noise": 0.5}, {"warm": 0.5}):
        with pytest.raises(RecipeError, match="grad_iters > 0"):
            stage_of({"grad_iters": 0, "start": start}, {"final_ce": {}})
    for term in ("early_gain", "distill", "settled_warm"):
        with pytest.raises(RecipeError, match=f"terms.{term}: needs the no-gradient solve"):
            stage_of({"grad_iters": 0}, {"final_ce": {}, term: {}})


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
        same, _, _ = model.block(z, inj, settled=model.block.kv(z))
        plain, _, _ = model.block(z, inj)
    assert torch.allclose(same, plain, atol=1e-5)


def test_the_settled_warm_term_trains_the_warm_start_path():
    model = non_contracting_tiny_model()
    batch = torch.tensor([list(TEXT[:48])])
    cold, _ = loss_of(model, batch, stage_of({"grad_iters": 1}, {"final_ce": {}}), 6)
    stage = stage_of({"grad_iters": 1}, {"final_ce": {}, "settled_warm": {"weight": 1.0}})
    loss, parts = loss_of(model, batch, stage, 6, term_draws={"settled_warm": 4})
    assert {"warm", "wdist"} <= set(parts) and parts["wdist"] > 0
    assert torch.isclose(loss, cold + parts["warm"] + parts["wdist"], rtol=1e-4)
    loss.backward()
    assert all(p.grad is not None for p in model.block.parameters())


def test_a_deep_solves_last_step_probes_a_slower_direction_than_a_random_one():
    """The slow-mode penalty's probe: after a deep Picard solve the last update points along the map's
    slowest-contracting direction (power iteration). On the committed eqlm-demo-anytime, whose random-direction gain the
    Jacobian penalty holds near its target, the gain along that direction is several times larger."""
    from eqlm.checkpoint import load_checkpoint
    from eqlm.terms import _probe_gain

    model, _ = load_checkpoint(ROOT / "models" / "eqlm-demo-anytime" / "checkpoint.pt")
    batch = torch.tensor([list((ROOT / "models" / "eqlm-demo-anytime" / "heldout_slice.txt").read_bytes()[:256])])
    with torch.no_grad():
        inj = model.embed(batch)
        z = torch.zeros_like(inj)
        for _ in range(32):
            previous, (z, _, _) = z, model.block(z, inj)
        fz, _, _ = model.block(z, inj)
        slow = _probe_gain(model, z, fz, inj, z - previous, 0.05).median()
        gen = torch.Generator().manual_seed(1)
        random = torch.stack(
            [_probe_gain(model, z, fz, inj, torch.randn(z.shape, generator=gen), 0.05) for _ in range(4)]
        )
    assert slow > 3 * random.median()


@pytest.mark.parametrize(
    ("grad_iters", "part", "term"),
    [
        (0, "slow", {"slow_mode": {"weight": 1.0, "target": 0.0}}),
        (2, "slow", {"slow_mode": {"weight": 1.0, "target": 0.0}}),
        (2, "early", {"early_gain": {"weight": 1.0, "target": 0.0}}),
        (2, "kd", {"distill": {"weight": 1.0, "depth": 2}}),
        (2, "prog", {"progressive": {"weight": 1.0, "max_iters": 6}}),
    ],
    ids=["slow-mode-full-gradient", "slow-mode", "early-gain", "distill", "progressive"],
)
def test_each_term_enters_the_loss_and_the_gradient(grad_iters, part, term):
    """With the term added (and nothing else changed), the loss grows, the part is logged, and it has a gradient."""
    model = non_contracting_tiny_model()
    batch = torch.tensor([list(TEXT[:48])])
    plain = stage_of({"grad_iters": grad_iters}, {"final_ce": {}})
    with_term = stage_of({"grad_iters": grad_iters}, {"final_ce": {}, **term})
    draws = {"progressive": (2, 3)}
    base, _ = loss_of(model, batch, plain, 6, term_draws=draws)
    loss, parts = loss_of(model, batch, with_term, 6, term_draws=draws)
    assert part in parts and parts[part] > 0
    assert loss > base
    model.zero_grad()
    (loss - base).backward()
    assert model.block.fc1.weight.grad.abs().sum() > 0


def test_the_early_gain_penalty_lowers_the_gain_at_the_first_iterates():
    """A few steps with only the early-gain term make the map's squared gain at z_1..z_3 smaller."""
    from eqlm.terms import _probe_gain

    torch.manual_seed(0)
    model = non_contracting_tiny_model()
    batch = torch.tensor([list(TEXT[i : i + 49]) for i in range(0, 4 * 49, 49)])
    stage = stage_of({"grad_iters": 1}, {"final_ce": {}, "early_gain": {"weight": 1.0, "target": 0.0}})
    plain = stage_of({"grad_iters": 1}, {"final_ce": {}})

    def early_gain() -> float:
        with torch.no_grad():
            inj = model.embed(batch[:, :-1])
            z, gains = torch.zeros_like(inj), []
            for k in range(1, 5):
                previous, (z, _, _) = z, model.block(z, inj)
                if k > 1:
                    probe = torch.randn(previous.shape, generator=torch.Generator().manual_seed(k))
                    gains.append(_probe_gain(model, previous, z, inj, probe, 0.05))
            return torch.stack(gains).mean().item()

    before = early_gain()
    opt = torch.optim.Adam(model.block.parameters(), lr=3e-3)
    for _ in range(20):
        loss, _ = loss_of(model, batch, stage, 4)
        base, _ = loss_of(model, batch, plain, 4)
        early_only = loss - base  # the same loss without the term: what is left is the term, with its gradient
        opt.zero_grad()
        early_only.backward()
        opt.step()
    assert early_gain() < 0.8 * before


def gradient_cosine_to_a_deep_unroll(model: EqLM, batch: torch.Tensor, implicit_iters: int = 0) -> float:
    """Cosine between the parameters' gradient of the final-state cross-entropy (79 iterations without gradient,
    one with it) and the gradient of the same cross-entropy through 80 plain iterations from zero."""
    import torch.nn.functional as F

    def flat_grad(loss):
        model.zero_grad()
        loss.backward()
        return torch.cat([p.grad.flatten() for p in model.parameters()])

    deep = flat_grad(F.cross_entropy(model.unrolled(batch[:, :-1], [80])[80].flatten(0, 1), batch[:, 1:].flatten()))
    stage = stage_of({"grad_iters": 1, "implicit_iters": implicit_iters}, {"final_ce": {}})
    loss, _ = loss_of(model, batch, stage, 79)
    return F.cosine_similarity(flat_grad(loss), deep, dim=0).item()


def test_the_implicit_gradient_is_close_to_the_gradient_through_a_deep_unroll_and_the_phantom_one_is_not():
    torch.manual_seed(0)
    model = EqLM(tiny_config())  # at initialisation the map settles, slowly: 80 iterations reach its fixed point
    batch = torch.randint(0, 256, (2, 33), generator=torch.Generator().manual_seed(1))
    phantom = gradient_cosine_to_a_deep_unroll(model, batch)
    implicit = gradient_cosine_to_a_deep_unroll(model, batch, implicit_iters=40)
    assert implicit > 0.95
    assert implicit > phantom + 0.2


@pytest.mark.slow  # trains two tiny models
def test_an_outside_teacher_is_distilled_and_named_by_its_content_in_the_provenance(tmp_path):
    from eqlm.checkpoint import load_checkpoint

    teacher = train_tiny(tmp_path, "teacher").checkpoint
    recipe = tiny_recipe(tmp_path)
    student_stage = recipe.resolve("first", [f"terms.distill={{ weight = 1.0, depth = 2, teacher = '{teacher}' }}"])
    student = train_stage(student_stage, tmp_path / "student", log=lambda _: None, eval_bytes=512).checkpoint
    provenance = torch.load(student, weights_only=True)["provenance"]
    assert provenance["teacher_checkpoint_sha256"] == hashlib.sha256(teacher.read_bytes()).hexdigest()
    # the teacher's logits are the targets of the anytime iterates too: another teacher, another loss at depth 2 alone
    model, _ = load_checkpoint(student)
    batch = torch.tensor([list(TEXT[:33])])
    losses = []
    for source in (teacher, student):
        other, _ = load_checkpoint(source)
        stage = stage_of(
            {"grad_iters": 1},
            {"anytime_ce": {"depths": [2]}, "distill": {"weight": 1.0, "depth": 2, "teacher": str(source)}},
        )
        loss, parts = loss_of(model, batch, stage, 4, teacher=other)
        assert "kd" in parts
        losses.append(loss.item())
    assert losses[0] != losses[1]


def test_the_depth_sampler_draws_heavy_tailed_depths_within_its_bounds_with_a_share_of_short_ones():
    import numpy as np

    from eqlm.objective import sample_depth

    depth = {"sampler": "lognormal_poisson", "min": 2, "max": 64, "mean": 16.0, "sigma": 0.5}
    depth |= {"short_share": 0.3, "short_min": 2, "short_max": 8}
    rng = np.random.default_rng(0)
    drawn = np.array([sample_depth(depth, rng) for _ in range(4000)])
    assert drawn.min() >= 2 and drawn.max() <= 64
    # the short share (0.3), plus the heavy-tailed draws that fall there (P(1 + Poisson <= 8) is about 0.16 of 0.7)
    assert 0.35 < (drawn <= 8).mean() < 0.47
    long = drawn[drawn > 8]
    assert 16 < long.mean() < 22 and np.percentile(long, 99) > 30


@pytest.mark.slow
def test_an_explicit_transformer_trains_from_its_recipe_and_its_checkpoint_loads(tmp_path):
    from eqlm.checkpoint import load_checkpoint

    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(TEXT * 4)
    raw = {
        "model": {"class": "ExplicitLM", "d_model": 16, "n_heads": 2, "d_mlp": 32, "n_layers": 3, "max_positions": 32},
        "corpus": {"file": str(corpus)},
        "stages": {
            "s": {
                "steps": 30,
                "batch_size": 4,
                "seq_len": 32,
                "schedule": {"lr": 1e-2, "warmup_steps": 2},
                "solve": {"kind": "explicit"},
                "terms": {"final_ce": {}},
            }
        },
    }
    outcome = train_stage(Recipe("x", Path("x.toml"), raw).resolve(), tmp_path / "run", log=print, eval_bytes=512)
    model, data = load_checkpoint(outcome.checkpoint)
    assert model.model_class == "ExplicitLM" and len(model.layers) == 3
    quick = data["provenance"]["metrics"]["heldout_quick"]
    assert list(quick) == ["3"]  # its one depth, the layer count
    assert quick["3"]["bpb"] < 6.0  # from 8 bits/byte at initialisation (uniform over 256 bytes)
    with pytest.raises(RecipeError, match="solve.kind"):
        Recipe("x", Path("x.toml"), {**raw, "stages": {"s": {**raw["stages"]["s"], "solve": {}}}}).resolve()
