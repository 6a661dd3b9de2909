"""One training step's solve: the state the loss terms see, computed as a stage's `solve` table says.

Per step the trainer draws (from the step's own generator, in this order) the solve depth, whether the solve starts
from noise, whether it continues warm, and each term's own draws; `forward_step` then runs:

- the trajectory from zero with gradient, as far as the terms need it (anytime iterates, early-gain probes);
- ``equilibrium``: the solve without gradient from the drawn start, then ``grad_iters`` iterations with gradient
  (the phantom gradient; the implicit-function-theorem gradient of the final state's cross-entropy when
  ``implicit_iters`` > 0), or, with ``grad_iters = 0``, the whole solve from zero with gradient;
- ``unrolled``: the trajectory from zero is the whole solve, supervised at its iterates;
- ``explicit``: one pass through an explicit transformer's layers (its depth is its layer count).

The loss is the sum of the terms (eqlm/terms.py). No Django imports here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch

from .fixed_point import iterate, iterates
from .model import predecessor_states
from .terms import _probe_gain, active_terms


@dataclass
class StepDraws:
    depth: int
    noise: bool = False
    warm: bool = False
    terms: dict[str, Any] = field(default_factory=dict)


def sample_depth(depth: dict, rng) -> int:
    """The solve depth: uniform on min..max, or 1 + Poisson(exp(N(log mean - sigma^2 / 2, sigma))) clipped to
    min..max (Huginn's heavy-tailed recurrence), with a share of steps drawn uniformly from short_min..short_max."""
    if depth["sampler"] == "uniform":
        return int(rng.integers(depth["min"], depth["max"] + 1))
    if depth["short_share"] and rng.random() < depth["short_share"]:
        return int(rng.integers(depth["short_min"], depth["short_max"] + 1))
    sigma = depth["sigma"]
    rate = math.exp(rng.normal(math.log(depth["mean"]) - sigma * sigma / 2, sigma))
    return int(min(depth["max"], max(depth["min"], 1 + rng.poisson(rate))))


def draw_step(stage: dict, rng) -> StepDraws:
    solve = stage["solve"]
    if solve["kind"] == "explicit":
        return StepDraws(stage["model"]["n_layers"])
    if solve["kind"] == "unrolled":
        depths = stage["terms"]["anytime_ce"]["depths"]
        deepest = int(rng.choice(depths)) if solve["sample_deepest"] else max(depths)
        return StepDraws(deepest)
    draws = StepDraws(sample_depth(solve["depth"], rng))
    draws.noise = bool(rng.random() < solve["start"]["noise"])
    # drawn only when asked for, so that runs without warm starts keep their batches, depths and noise
    draws.warm = bool(solve["start"]["warm"] and rng.random() < solve["start"]["warm"])
    for term, params in active_terms(stage["terms"]):
        value = term.draw(params, rng)
        if value is not None:
            draws.terms[term.name] = value
    return draws


@dataclass
class StepState:
    """What the terms read: the batch, the trajectory's iterates, the final state and what was drawn."""

    model: Any
    x: torch.Tensor
    y: torch.Tensor
    inj: torch.Tensor
    gen: torch.Generator
    penalty_scale: float
    draws: dict
    grad_iters: int
    anytime: dict[int, torch.Tensor] = field(default_factory=dict)
    early_gains: list[torch.Tensor] = field(default_factory=list)
    teacher_logits: torch.Tensor | None = None
    z: torch.Tensor | None = None
    ce_z: torch.Tensor | None = None
    solved: torch.Tensor | None = None
    last_step: torch.Tensor | None = None
    residual_on: bool = True
    parts: dict[str, torch.Tensor] = field(default_factory=dict)
    stash: dict[str, Any] = field(default_factory=dict)  # per-term values computed along the trajectory
    _fz: torch.Tensor | None = None
    _final_logits: torch.Tensor | None = None

    @property
    def anytime_supervised(self) -> list[int]:
        return self.stash.get("anytime_ce_depths", [])

    def fz(self) -> torch.Tensor:
        if self._fz is None:
            self._fz, _, _ = self.model.block(self.z, self.inj)
        return self._fz

    def final_logits(self) -> torch.Tensor:
        if self._final_logits is None:
            self._final_logits = self.model.head(self.ce_z if self.ce_z is not None else self.z)
        return self._final_logits


def _trajectory(s: StepState, terms, last: int, early: set[int], eps: float, stop_below: int | None = None) -> None:
    """Iterate from zero with gradient up to `last`, handing each term the iterates it asked for."""
    model, inj = s.model, s.inj
    wanted = set().union(*(t.anytime_depths(p) for t, p in terms)) if terms else set()
    if stop_below is not None:
        wanted = {d for d in wanted if d < stop_below}
    z = torch.zeros_like(inj)
    previous = z
    for i, after in iterates(lambda z: model.block(z, inj)[0], z, last):
        previous, z = z, after
        if i - 1 in early and i > 1:  # the gain at z_(i-1), whose image z_i was just computed
            probe = torch.randn(previous.shape, generator=s.gen).to(previous.device)
            s.early_gains.append(_probe_gain(model, previous, z, inj, probe, eps))
        if i in wanted:
            logits = model.head(z)
            s.anytime[i] = logits
            for term, params in terms:
                hook = getattr(term, "at_iterate", None)
                if hook is not None:
                    hook(params, s, i, logits)
    s.z, s.last_step = z, (z - previous).detach()


def forward_step(model, x, y, stage: dict, draws: StepDraws, gen, penalty_scale=1.0, teacher=None):
    """(loss, parts) of one step: the solve the stage's `solve` table describes, then the sum of its terms."""
    solve = stage["solve"]
    terms = active_terms(stage["terms"])
    if solve["kind"] == "explicit":  # one pass through the stack: the final state's logits are the model's
        s = StepState(model, x, y, None, gen, penalty_scale, draws.terms, 0)
        s._final_logits = model(x)
        return _sum_terms(terms, s)
    inj = model.embed(x)
    s = StepState(model, x, y, inj, gen, penalty_scale, draws.terms, solve["grad_iters"])
    if solve["kind"] == "unrolled":
        depths = [d for d in stage["terms"]["anytime_ce"]["depths"] if d <= draws.depth]
        s.stash["unrolled_depths"] = depths
        _trajectory(s, terms, max(depths), set(), 0.0)
        s.residual_on = draws.depth == max(stage["terms"]["anytime_ce"]["depths"])
        return _sum_terms(terms, s)
    if solve["grad_iters"] <= 0:  # full gradient: one trajectory from zero, supervised below the drawn depth and at it
        _trajectory(s, terms, draws.depth, set(), 0.0, stop_below=draws.depth)
        return _sum_terms(terms, s)
    distill = stage["terms"].get("distill")
    if distill and distill["teacher"] and teacher is not None:
        with torch.no_grad():
            s.teacher_logits = teacher.unrolled(x, [distill["depth"]])[distill["depth"]]
    early = set()
    eps = 0.05
    if "early_gain" in stage["terms"]:
        early, eps = set(stage["terms"]["early_gain"]["iters"]), stage["terms"]["early_gain"]["eps"]
    wanted = set().union(*(t.anytime_depths(p) for t, p in terms))
    if wanted or early:
        _trajectory(s, terms, max([*wanted, *(k + 1 for k in early)]), early, eps)
        for term, params in terms:
            hook = getattr(term, "after_trajectory", None)
            if hook is not None:
                hook(params, s)
    with torch.no_grad():
        z = torch.randn(inj.shape, generator=gen).to(inj.device) if draws.noise else torch.zeros_like(inj)
        inj_nograd = inj.detach()
        grad_iters = solve["grad_iters"]
        settle_iters = draws.depth
        if solve["depth_includes_grad"]:
            grad_iters = min(grad_iters, draws.depth)
            settle_iters = draws.depth - grad_iters

        def settle(z):
            previous = z
            for _, after in iterates(lambda z: model.block(z, inj_nograd)[0], z, settle_iters):
                previous, z = z, after
            return z, z - previous

        z, step = settle(z)
        if draws.warm:  # the runtime's warm start: every position starts from its predecessor's solved state
            z, step = settle(predecessor_states(z))
    z = z.detach()
    s.solved, s.last_step, s.grad_iters = z, step, grad_iters
    z = iterate(lambda z: model.block(z, inj)[0], z, grad_iters)
    s.z = s.ce_z = z
    if solve["implicit_iters"]:
        s.ce_z = z + 0  # a node of its own: only the cross-entropy's gradient goes through the implicit solve
        s.ce_z.register_hook(_implicit_backward(model, z.detach(), inj.detach(), solve["implicit_iters"], s.parts))
    return _sum_terms(terms, s)


def _sum_terms(terms, s: StepState):
    loss = None
    for term, params in terms:
        value = term.loss(params, s)
        if value is not None:
            loss = value if loss is None else loss + value
    return loss, s.parts


def _implicit_backward(model, z, inj, iters, parts):
    """A gradient hook at a (near) fixed point z: g -> g + J^T g + (J^T)^2 g + ... (`iters` terms after g), the
    Neumann series of (I - J^T)^-1 g with J = df/dz at z, by vector-Jacobian products of one block call. The
    backward pass then carries that gradient through the iterations with gradient to the parameters, which is the
    implicit-function-theorem gradient of the fixed point when z is one (Bai et al. 2019, "Deep Equilibrium Models").
    Where the map does not contract (positions not yet settled) the series diverges: it stops before a term larger
    than g. The number of terms used goes into `parts` as "ift"."""
    z0 = z.detach().requires_grad_()
    with torch.enable_grad():
        f0, _, _ = model.block(z0, inj)

    def hook(grad):
        term, total, used = grad, grad, 0
        limit = grad.norm()
        for _ in range(iters):
            (term,) = torch.autograd.grad(f0, z0, term, retain_graph=True)
            if term.norm() > limit:
                break
            total, used = total + term, used + 1
        parts["ift"] = torch.tensor(float(used))
        return total

    return hook
