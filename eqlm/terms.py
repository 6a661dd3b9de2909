"""Loss terms: each an object with a name, parameters, what it needs from the solve, its loss and its logs.

A stage's loss is the sum of the terms its recipe names, in the order of ``TERMS`` below, each multiplied by its
weight (and, for the penalties, by the stage's penalty ramp). What a term needs from the solve it declares:

- ``anytime_depths(params)``: iterates of the trajectory from zero (with gradient) whose logits it reads;
- ``early_iters(params)``: iterates of that trajectory at which the map's gain is probed;
- ``draw(params, rng)``: its own per-step random draws, taken from the step's generator after the solve's.

The solve itself (``eqlm/objective.py``) computes only what the present terms need. No Django imports here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .fixed_point import iterate
from .schema import FLOAT, INT, LIST, OPT_STR, Key, RecipeError, check_table, depth_list, non_negative

if TYPE_CHECKING:
    import torch

    from .objective import StepState


class Term:
    """A loss term. Subclasses set `name`, `params` (recipe keys besides `weight`) and `value`."""

    name = ""
    params: dict[str, Key] = {}
    ramped = False  # penalties ramp in over schedule.penalty_warmup_steps
    kinds = ("equilibrium",)  # the solve kinds it works with

    def anytime_depths(self, p: dict) -> set[int]:
        return set()

    def early_iters(self, p: dict) -> set[int]:
        return set()

    def draw(self, p: dict, rng) -> Any:
        return None

    def value(self, p: dict, s: StepState) -> torch.Tensor | None:
        raise NotImplementedError

    def loss(self, p: dict, s: StepState) -> torch.Tensor | None:
        v = self.value(p, s)
        if v is None:
            return None
        scale = s.penalty_scale * p["weight"] if self.ramped else p["weight"]
        return scale * v


def _probe_gain(model, z, fz, inj, direction, eps):
    """Per-position squared gain ||f(z + d) - f(z)||^2 / ||d||^2 of the map along `direction` [B, T, D], the probe d
    scaled to `eps` times each position's state norm (a forward difference: one block call, no double backward)."""
    scale = eps * z.detach().norm(dim=-1, keepdim=True) / (direction.norm(dim=-1, keepdim=True) + 1e-12)
    delta = direction * scale
    f_delta, _, _ = model.block(z + delta, inj)
    return (f_delta - fz).pow(2).sum(-1) / (delta.pow(2).sum(-1) + 1e-30)


def soft_cross_entropy(teacher: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    """Mean over positions of -sum_v p_teacher(v) log p(v): cross-entropy to the teacher's next-byte distribution."""
    import torch.nn.functional as F

    return -(F.softmax(teacher, dim=-1) * F.log_softmax(logits, dim=-1)).sum(-1).mean()


def _hinge(x, target):
    import torch.nn.functional as F

    return F.relu(x - target).mean()


def _ce(logits, y):
    import torch.nn.functional as F

    return F.cross_entropy(logits.flatten(0, 1), y.flatten())


class FinalCE(Term):
    """Cross-entropy at the solve's final state (through the implicit gradient when the solve asks for it)."""

    name = "final_ce"
    kinds = ("equilibrium", "explicit")

    def value(self, p, s):
        ce = _ce(s.final_logits(), s.y)
        s.parts["eq"] = ce.detach()
        return ce


class AnytimeCE(Term):
    """Mean cross-entropy at fixed depths of the trajectory from zero, gradients through every iterate."""

    name = "anytime_ce"
    params = {"depths": Key(LIST, [4, 8], depth_list)}
    kinds = ("equilibrium", "unrolled")

    def anytime_depths(self, p):
        return set(p["depths"])

    def at_iterate(self, p, s, i, logits):
        if i in p["depths"]:
            ce = _ce(logits, s.y)
            s.parts[f"d{i}"] = ce.detach()
            s.stash.setdefault("anytime_ce", []).append(ce)
            s.stash.setdefault("anytime_ce_depths", []).append(i)

    def value(self, p, s):
        losses = s.stash.get("anytime_ce")
        return sum(losses) / len(losses) if losses else None


class Distill(Term):
    """Soft cross-entropy to a teacher's next-byte distribution at the final state: the student's own iterate at
    `depth` (no gradient), or another model's logits at `depth` (`teacher`, a checkpoint), which then also teaches
    the iterates that anytime_ce supervises (half the term each)."""

    name = "distill"
    params = {"depth": Key(INT, 8, lambda v: None if v >= 1 else "must be >= 1"), "teacher": Key(OPT_STR, None)}

    def anytime_depths(self, p):
        return set() if p["teacher"] else {p["depth"]}

    def at_iterate(self, p, s, i, logits):
        if p["teacher"] and i in s.anytime_supervised:
            s.stash.setdefault("distill_anytime", []).append(soft_cross_entropy(s.teacher_logits, logits))

    def value(self, p, s):
        logits = s.final_logits()
        if p["teacher"]:
            soft = soft_cross_entropy(s.teacher_logits, logits)
            s.parts["kd"] = soft.detach()
            anytime = s.stash.get("distill_anytime")
            if anytime:
                soft = 0.5 * soft + 0.5 * sum(anytime) / len(anytime)
            return soft
        soft = soft_cross_entropy(s.anytime[p["depth"]].detach(), logits)
        s.parts["kd"] = soft.detach()
        return soft


class Residual(Term):
    """Squared relative residual ||f(z) - z|| / ||z|| at the final state."""

    name = "residual"
    ramped = True
    kinds = ("equilibrium", "unrolled")

    def value(self, p, s):
        if not s.residual_on:
            return None
        from .model import relative_residual

        residual = relative_residual(s.fz(), s.z)
        s.parts["res"] = residual.detach().median()
        return residual.pow(2).mean()


class Jacobian(Term):
    """Hinged finite-difference Hutchinson estimate of the map's squared gain at the final state, along a random
    direction (Bai et al. 2021, "Stabilizing Equilibrium Models by Jacobian Regularization")."""

    name = "jacobian"
    ramped = True
    params = {"target": Key(FLOAT, 0.25, non_negative), "eps": Key(FLOAT, 0.05, non_negative)}

    def value(self, p, s):
        import torch

        gain = _probe_gain(
            s.model, s.z, s.fz(), s.inj, torch.randn(s.z.shape, generator=s.gen).to(s.z.device), p["eps"]
        )
        s.parts["jac"] = gain.detach().mean()
        return _hinge(gain, p["target"])


class SlowMode(Term):
    """The map's gain along the solve's last update, which a deep Picard solve aligns with the slowest-contracting
    direction (power iteration), hinged at `target`."""

    name = "slow_mode"
    ramped = True
    params = {"target": Key(FLOAT, 0.5, non_negative), "eps": Key(FLOAT, 0.05, non_negative)}

    def value(self, p, s):
        slow = _probe_gain(s.model, s.z, s.fz(), s.inj, s.last_step, p["eps"])
        s.parts["slow"] = slow.detach().median()
        return _hinge(slow, p["target"])


class EarlyGain(Term):
    """The map's squared gain at the first iterates from zero (z_k, k in `iters`), hinged at `target`: where float32
    rounding is amplified most, which the penalties at the fixed point do not reach."""

    name = "early_gain"
    ramped = True
    params = {
        "iters": Key(LIST, [1, 2, 3], depth_list),
        "target": Key(FLOAT, 9.0, non_negative),
        "eps": Key(FLOAT, 0.05, non_negative),
    }

    def early_iters(self, p):
        return set(p["iters"])

    def after_trajectory(self, p, s):
        import torch

        gain = torch.stack(s.early_gains)
        s.parts["early"] = gain.detach().amax(0).median()
        s.stash["early_gain"] = _hinge(gain, p["target"])

    def value(self, p, s):
        return s.stash["early_gain"]


class SettledWarm(Term):
    """The runtime's warm start, trained: every position starts at its predecessor's solved state and iterates
    against the solved states before it (iters drawn from iters_min..iters_max without gradient, then the solve's
    grad_iters with it); cross-entropy there plus the relative squared distance to its own solved state."""

    name = "settled_warm"
    params = {"iters_min": Key(INT, 4, non_negative), "iters_max": Key(INT, 12, non_negative)}

    def draw(self, p, rng):
        return int(rng.integers(p["iters_min"], p["iters_max"] + 1))

    def value(self, p, s):
        import torch

        from .model import predecessor_states

        model, inj = s.model, s.inj
        with torch.no_grad():
            settled = model.block.kv(s.solved, inj.detach())
            z = predecessor_states(s.solved)
            z = iterate(lambda z: model.block(z, inj.detach(), settled=settled)[0], z, s.draws[self.name])
        z = iterate(lambda z: model.block(z, inj, settled=settled)[0], z.detach(), s.grad_iters)
        ce = _ce(model.head(z), s.y)
        distance = (z - s.solved).pow(2).sum(-1) / (s.solved.pow(2).sum(-1) + 1e-12)
        s.parts["warm"] = ce.detach()
        s.parts["wdist"] = distance.detach().mean()
        return ce + distance.mean()


class Progressive(Term):
    """The progressive loss of Bansal, Schwarzschild et al. 2022 ("deep thinking"): from zero, n ~ U{0..max-1}
    iterations without gradient, then k ~ U{1..max-n} with it, cross-entropy there. It rewards a state that keeps
    improving from wherever an earlier solve left it, not only at fixed depths."""

    name = "progressive"
    params = {"max_iters": Key(INT, 32, lambda v: None if v >= 1 else "must be >= 1")}

    def draw(self, p, rng):
        n = int(rng.integers(0, p["max_iters"]))
        return n, int(rng.integers(1, p["max_iters"] - n + 1))

    def value(self, p, s):
        import torch

        n, k = s.draws[self.name]
        model, inj = s.model, s.inj
        with torch.no_grad():
            z = iterate(lambda z: model.block(z, inj.detach())[0], torch.zeros_like(inj), n)
        z = iterate(lambda z: model.block(z, inj)[0], z, k)
        ce = _ce(model.head(z), s.y)
        s.parts["prog"] = ce.detach()
        return ce


TERMS: dict[str, Term] = {
    t.name: t
    for t in (
        FinalCE(),
        AnytimeCE(),
        Distill(),
        Residual(),
        Jacobian(),
        SlowMode(),
        EarlyGain(),
        SettledWarm(),
        Progressive(),
    )
}
WEIGHT = Key(FLOAT, 1.0, non_negative)


def validate_terms(data: dict, path: str) -> dict:
    """The terms table checked: known term names, known parameters, their types; defaults filled; TERMS order."""
    if not isinstance(data, dict):
        raise RecipeError(f"{path}: expected a table of terms")
    unknown = sorted(set(data) - set(TERMS))
    if unknown:
        raise RecipeError(f"unknown term {path}.{unknown[0]}; terms: {sorted(TERMS)}")
    out = {}
    for name, term in TERMS.items():
        if name in data:
            out[name] = check_table({"weight": WEIGHT, **term.params}, data[name], f"{path}.{name}.")
    if not out:
        raise RecipeError(f"{path}: a stage needs at least one loss term")
    return out


def check_terms_against_solve(stage: dict) -> None:
    solve, terms = stage["solve"], stage["terms"]
    for name, params in terms.items():
        if solve["kind"] not in TERMS[name].kinds:
            raise RecipeError(f"terms.{name}: not available with solve.kind = {solve['kind']!r}")
        if solve["grad_iters"] == 0 and name in ("early_gain", "distill", "settled_warm"):
            raise RecipeError(f"terms.{name}: needs the no-gradient solve (solve.grad_iters > 0)")
        if name == "settled_warm" and params["iters_min"] > params["iters_max"]:
            raise RecipeError("terms.settled_warm.iters_min: must be <= iters_max")
    if solve["kind"] == "unrolled" and "anytime_ce" not in terms:
        raise RecipeError("terms.anytime_ce: the unrolled solve supervises its iterates (it has no final state)")


def active_terms(stage_terms: dict) -> list[tuple[Term, dict]]:
    """(term, params) in TERMS order for the terms a stage names."""
    return [(TERMS[name], stage_terms[name]) for name in TERMS if name in stage_terms]
