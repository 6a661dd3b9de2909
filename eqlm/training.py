"""Training the demo EqLMs: anytime (unrolled) supervision or equilibrium training, resumable and scheduled by step.

Two objectives:

- ``unrolled``: cross-entropy on the plain iterates at the supervised depths (4/8/12), gradients through all of them.
  This is how the original demo model was trained; its quality peaks at the trained depths and collapses past them.
- ``equilibrium``: train the fixed point itself. Per step a solve depth K is drawn; K iterations run without gradient
  (from z = 0 or from a random state, for path independence), then ``grad_iters`` iterations with gradient (the
  one-step / phantom implicit gradient) give the cross-entropy at the equilibrium. Anytime cross-entropy at low depths
  (4, 8) keeps a small budget usable, a residual penalty on the final state and a finite-difference Hutchinson estimate
  of the Jacobian's Frobenius norm (Bai et al. 2021, "Stabilizing Equilibrium Models by Jacobian Regularization") make
  the map contract; the optional slow-mode penalty probes the map along the solve's last update instead, the direction
  a deep Picard solve leaves least contracted. Optionally the cross-entropy's gradient at the final state goes through
  the implicit-function-theorem solve (a Neumann series of vector-Jacobian products) rather than the phantom gradient
  alone, and a distillation term teaches the final state the next-byte distribution of an anytime iterate (or of
  another model, a teacher checkpoint, whose distribution the anytime iterates then learn too).

Everything a step uses (its batch, its drawn depth, its initial noise) comes from a generator seeded by
(seed, step), and the learning-rate schedule depends on the step count alone, so a run stopped at any point and
started again from its last checkpoint gives the same model as an uninterrupted run from the same seed.
No Django imports here.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from .checkpoint import save_checkpoint
from .corpus import CORPUS_NAME, load_corpus, split
from .model import EqLM, EqLMConfig, relative_residual

LN2 = math.log(2)
OBJECTIVES = ("unrolled", "equilibrium")


@dataclass
class TrainSettings:
    seed: int = 0
    batch_size: int = 8
    seq_len: int = 256
    lr: float = 3e-3
    min_lr_ratio: float = 0.1
    warmup_steps: int = 100
    weight_decay: float = 0.05
    steps: int | None = None  # the planned step count; None: derived once from max_minutes and the first steps' speed
    max_minutes: float = 60.0  # a safety stop only: the schedule follows `steps`
    checkpoint_minutes: float = 5.0
    checkpoint_steps: int = 200  # the resumable training state is written every this many steps
    residual_weight: float = 0.1
    sample_depths: bool = True  # unrolled: per step, draw the deepest supervised depth
    eval_bytes: int = 32768
    threads: int = 2
    # equilibrium objective
    objective: str = "unrolled"
    anytime_depths: list[int] = field(default_factory=lambda: [4, 8])
    solve_depth_min: int = 12
    solve_depth_max: int = 32
    grad_iters: int = 2  # 0: full gradient through the whole solve (from zero), no no-gradient part
    jacobian_weight: float = 0.0
    jacobian_eps: float = 0.05  # relative size of the finite-difference probe
    jacobian_target: float = 0.25  # only a squared gain above this is penalised (0.25: contraction by about 1/2)
    penalty_warmup_steps: int = 300  # residual and Jacobian penalties ramp in linearly (at full strength from step 0
    # they make the constant map, which ignores the context, the easiest optimum)
    random_init_prob: float = 0.0  # share of steps whose no-gradient solve starts from a random state
    warm_init_prob: float = 0.0  # share of steps whose no-gradient solve starts from the previous position's solved
    # state, as the runtime's warm start does (path independence for that start, not only for z = 0)
    settled_weight: float = 0.0  # weight of the settled-context warm-start term (the runtime's warm start): each
    # position starts from its predecessor's solved state and iterates against the solved states before it; the
    # term is the cross-entropy there plus the squared distance to the position's own solved state
    settled_iters_min: int = 4  # no-gradient iterations of that warm solve (drawn per step), before grad_iters
    settled_iters_max: int = 12
    slow_mode_weight: float = 0.0  # weight of the slow-mode penalty: the map's gain along the solve's last step, which
    # a deep Picard solve aligns with the Jacobian's slowest-contracting direction (power iteration), hinged at
    # slow_mode_target; the random-probe Jacobian penalty averages over directions and leaves that one near 1
    slow_mode_target: float = 0.5  # squared gain below which no penalty (0.5: about 0.7 per iteration)
    early_gain_weight: float = 0.0  # weight of the early-gain penalty: the map's squared gain at the first iterates
    # from zero (z_k for k in early_gain_iters), hinged at early_gain_target. Those iterates are where float32
    # rounding is amplified most (a served graph must reproduce torch's logits), and the penalties at the fixed
    # point do not reach them
    early_gain_iters: list[int] = field(default_factory=lambda: [1, 2, 3])
    early_gain_target: float = 9.0  # squared gain below which no penalty (9: at most tripling a perturbation); the
    # probe is random, as the Jacobian penalty's (a power-iterated probe finds this non-normal map's dominant
    # eigen-direction, whose gain on eqlm-demo is lower than a random probe's)
    implicit_iters: int = 0  # with grad_iters > 0: the cross-entropy's gradient at the final state goes through
    # (I - J^T)^-1, the implicit-function-theorem gradient of a fixed point (Bai et al. 2019), approximated by this
    # many Neumann terms (vector-Jacobian products of the map at that state); 0: the phantom gradient alone
    distill_weight: float = 0.0  # weight of a soft cross-entropy from the anytime iterate at distill_depth (no
    # gradient: the teacher) to the final state's next-byte distribution, so the fixed point learns what the better
    # transient predicts, not only the one-hot next byte
    distill_depth: int = 8
    teacher_checkpoint: str | None = None  # distil from this model's logits at distill_depth instead (no gradient),
    # into the final state and every anytime iterate: another model's better predictions, not the student's own
    corpus: str = "kjv"
    init_checkpoint: str | None = None  # fine-tune: start from this checkpoint's weights (its config is used)
    stop_after: int | None = None  # end this invocation after this many steps in all (a stop, not a schedule change)

    def to_dict(self) -> dict:
        return asdict(self)


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True, timeout=10)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def lr_at(step: int, total: int, s: TrainSettings) -> float:
    """Linear warmup, then cosine to min_lr_ratio over the planned steps (a function of the step alone)."""
    if step < s.warmup_steps:
        return s.lr * (step + 1) / s.warmup_steps
    frac = min(1.0, (step - s.warmup_steps) / max(1, total - s.warmup_steps))
    return s.lr * (s.min_lr_ratio + (1 - s.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * frac)))


def anytime_loss(model: EqLM, x: torch.Tensor, y: torch.Tensor, depths: list[int], residual_weight: float):
    """Mean cross-entropy over the supervised depths plus a small penalty on the last iterate's residual."""
    inj = model.embed(x)
    z = torch.zeros_like(inj)
    losses = {}
    for i in range(1, max(depths) + 1):
        z, _, _ = model.block(z, inj)
        if i in depths:
            losses[i] = F.cross_entropy(model.head(z).flatten(0, 1), y.flatten())
    loss = sum(losses.values()) / len(losses)
    if residual_weight:
        fz, _, _ = model.block(z, inj)
        loss = loss + residual_weight * relative_residual(fz, z).pow(2).mean()
    return loss, losses


def equilibrium_loss(
    model: EqLM,
    x: torch.Tensor,
    y: torch.Tensor,
    settings: TrainSettings,
    solve_depth: int,
    generator: torch.Generator,
    random_init: bool,
    penalty_scale: float = 1.0,
    warm_init: bool = False,
    settled_iters: int = 0,
    teacher_model: EqLM | None = None,
):
    """Cross-entropy at the fixed point (phantom gradient), anytime cross-entropy, residual and Jacobian penalties.

    Returns (loss, parts) where parts maps a name to a detached scalar for logging. With `teacher_model` (and
    settings.distill_weight), that model's logits at distill_depth are the distillation targets of the final state and
    of every anytime iterate.
    """
    inj = model.embed(x)
    parts: dict[str, torch.Tensor] = {}
    losses = []
    if settings.grad_iters <= 0:  # full gradient: one trajectory from zero, supervised at the low depths and at K
        z = torch.zeros_like(inj)
        for i in range(1, solve_depth + 1):
            previous = z
            z, _, _ = model.block(z, inj)
            if i in settings.anytime_depths and i < solve_depth:
                ce = F.cross_entropy(model.head(z).flatten(0, 1), y.flatten())
                parts[f"d{i}"] = ce.detach()
                losses.append(ce)
        step = (z - previous).detach()
        return _fixed_point_terms(model, z, inj, y, settings, losses, parts, generator, penalty_scale, step)
    early = sorted(set(settings.early_gain_iters)) if settings.early_gain_weight else []
    early_term = None
    teacher = None  # the distillation targets: logits at distill_depth (no gradient)
    distill = [settings.distill_depth] if settings.distill_weight and teacher_model is None else []
    anytime_soft = []  # with an outside teacher: the anytime iterates' soft cross-entropies
    if settings.distill_weight and teacher_model is not None:
        with torch.no_grad():
            teacher = teacher_model.unrolled(x, [settings.distill_depth])[settings.distill_depth]
    if settings.anytime_depths or early or distill:
        z = torch.zeros_like(inj)
        gains = []
        for i in range(1, max([*settings.anytime_depths, *(k + 1 for k in early), *distill]) + 1):
            previous = z
            z, _, _ = model.block(z, inj)
            if i - 1 in early and i > 1:  # the gain at z_(i-1), whose image z_i was just computed
                probe = torch.randn(previous.shape, generator=generator)
                gains.append(_gain(model, previous, z, inj, probe, settings.jacobian_eps))
            if i in settings.anytime_depths or i in distill:
                logits = model.head(z)
                if i in distill:
                    teacher = logits.detach()
            if i in settings.anytime_depths:
                ce = F.cross_entropy(logits.flatten(0, 1), y.flatten())
                parts[f"d{i}"] = ce.detach()
                losses.append(ce)
                if teacher_model is not None and teacher is not None:
                    anytime_soft.append(_soft_cross_entropy(teacher, logits))
        if gains:
            gain = torch.stack(gains)
            parts["early"] = gain.detach().amax(0).median()
            early_term = F.relu(gain - settings.early_gain_target).mean()
    with torch.no_grad():
        if random_init:
            z = torch.randn(inj.shape, generator=generator)  # about the scale of a LayerNorm output
        else:
            z = torch.zeros_like(inj)
        inj_nograd = inj.detach()

        def settle(z):
            for _ in range(solve_depth):
                previous = z
                z, _, _ = model.block(z, inj_nograd)
            return z, z - previous

        z, step = settle(z)
        if warm_init:  # the runtime's warm start: every position starts from its predecessor's solved state
            z, step = settle(predecessor_states(z))
    z = z.detach()
    solved = z
    for _ in range(settings.grad_iters):
        z, _, _ = model.block(z, inj)
    ce_z = z
    if settings.implicit_iters:
        ce_z = z + 0  # a node of its own: only the cross-entropy's gradient goes through the implicit solve
        ce_z.register_hook(_implicit_backward(model, z.detach(), inj.detach(), settings.implicit_iters, parts))
    loss, parts = _fixed_point_terms(
        model, z, inj, y, settings, losses, parts, generator, penalty_scale, step, ce_z, teacher, anytime_soft
    )
    if early_term is not None:
        loss = loss + penalty_scale * settings.early_gain_weight * early_term
    if settings.settled_weight and settled_iters:
        loss = loss + settings.settled_weight * _settled_warm_term(
            model, solved, inj, y, settings, settled_iters, parts
        )
    return loss, parts


def predecessor_states(z: torch.Tensor) -> torch.Tensor:
    """Each position's start under warm start: its predecessor's state [B, T, D] (zero for the first position)."""
    return torch.cat([torch.zeros_like(z[:, :1]), z[:, :-1]], dim=1)


def _settled_warm_term(model, solved, inj, y, settings, iters, parts):
    """The runtime's warm start, trained: every position starts at its predecessor's solved state and iterates
    against the solved states before it (`iters` without gradient, then `grad_iters` with it); cross-entropy there
    plus the relative squared distance to its own solved state, so that start reaches the same fixed point."""
    with torch.no_grad():
        settled = model.block.kv(solved)
        z = predecessor_states(solved)
        for _ in range(iters):
            z, _, _ = model.block(z, inj.detach(), settled=settled)
    z = z.detach()
    for _ in range(settings.grad_iters):
        z, _, _ = model.block(z, inj, settled=settled)
    ce = F.cross_entropy(model.head(z).flatten(0, 1), y.flatten())
    distance = (z - solved).pow(2).sum(-1) / (solved.pow(2).sum(-1) + 1e-12)
    parts["warm"] = ce.detach()
    parts["wdist"] = distance.detach().mean()
    return ce + distance.mean()


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


def _gain(model, z, fz, inj, direction, eps):
    """Per-position squared gain ||f(z + d) - f(z)||^2 / ||d||^2 of the map along `direction` [B, T, D], the probe d
    scaled to `eps` times each position's state norm (a forward difference: one block call, no double backward)."""
    scale = eps * z.detach().norm(dim=-1, keepdim=True) / (direction.norm(dim=-1, keepdim=True) + 1e-12)
    delta = direction * scale
    f_delta, _, _ = model.block(z + delta, inj)
    return (f_delta - fz).pow(2).sum(-1) / (delta.pow(2).sum(-1) + 1e-30)


def _soft_cross_entropy(teacher: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    """Mean over positions of -sum_v p_teacher(v) log p(v): cross-entropy to the teacher's next-byte distribution."""
    return -(F.softmax(teacher, dim=-1) * F.log_softmax(logits, dim=-1)).sum(-1).mean()


def _fixed_point_terms(
    model, z, inj, y, settings, losses, parts, generator, penalty_scale, step, ce_z=None, teacher=None, anytime_soft=()
):
    """The cross-entropy at the final state (mixed with the anytime losses) plus the residual and Jacobian penalties.

    `step` is the solve's last update z_K - z_(K-1) (no gradient), the probe direction of the slow-mode penalty.
    `ce_z` (default z) is the final state as the cross-entropy and distillation terms see it (the implicit gradient
    hooks that node only); `teacher`, logits [B, T, V] without gradient, adds the distillation term, mixed with the
    anytime iterates' soft cross-entropies (`anytime_soft`, when an outside teacher gives them) as the hard ones are.
    """
    logits = model.head(z if ce_z is None else ce_z)
    ce_star = F.cross_entropy(logits.flatten(0, 1), y.flatten())
    parts["eq"] = ce_star.detach()
    loss = ce_star if not losses else 0.5 * ce_star + 0.5 * sum(losses) / len(losses)
    if teacher is not None:
        soft = _soft_cross_entropy(teacher, logits)
        parts["kd"] = soft.detach()
        if anytime_soft:
            soft = 0.5 * soft + 0.5 * sum(anytime_soft) / len(anytime_soft)
        loss = loss + settings.distill_weight * soft
    fz, _, _ = model.block(z, inj)
    residual = relative_residual(fz, z)
    parts["res"] = residual.detach().median()
    if settings.residual_weight:
        loss = loss + penalty_scale * settings.residual_weight * residual.pow(2).mean()
    if settings.jacobian_weight:
        # ||J e||^2 / ||e||^2 by a forward difference along a random direction: an unbiased-in-the-limit Hutchinson
        # estimate of ||J||_F^2 / D that costs one extra block call instead of a double backward
        gain = _gain(model, z, fz, inj, torch.randn(z.shape, generator=generator), settings.jacobian_eps)
        parts["jac"] = gain.detach().mean()
        loss = loss + penalty_scale * settings.jacobian_weight * F.relu(gain - settings.jacobian_target).mean()
    if settings.slow_mode_weight:
        # after a deep solve the last update points along the slowest-contracting direction (power iteration)
        slow = _gain(model, z, fz, inj, step, settings.jacobian_eps)
        parts["slow"] = slow.detach().median()
        loss = loss + penalty_scale * settings.slow_mode_weight * F.relu(slow - settings.slow_mode_target).mean()
    return loss, parts


def quick_convergence(model: EqLM, data: bytes, depths: list[int], seq_len: int, max_bytes: int, tol: float = 0.01):
    """Held-out bits/byte and the share of positions with relative residual < tol, per depth (Picard from zero).

    The figures of `eqlm.convergence.profile_by_depth` (the evaluation's own measurement) on the first max_bytes.
    """
    from .convergence import TorchBackend, profile_by_depth, tolerance_key, windows_of

    windows = windows_of(data[:max_bytes], seq_len)
    profile = profile_by_depth(TorchBackend(model), windows, max_depth=max(depths), tolerances=(tol,), batch=32)
    key = tolerance_key(tol)
    figures = {d: profile.by_depth[d] for d in depths}
    # plain floats: the figures go into the checkpoint's provenance, which weights_only loading reads back
    return {d: {"bpb": float(f.bits_per_byte), "converged": float(f.converged[key])} for d, f in figures.items()}


def _atomic_torch_save(payload: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    os.close(fd)
    try:
        torch.save(payload, tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


# settings added after runs were recorded, each led by the one that switches it on
ADDED_LATER = (
    ("warm_init_prob",),
    ("settled_weight", "settled_iters_min", "settled_iters_max"),
    ("slow_mode_weight", "slow_mode_target"),
    ("early_gain_weight", "early_gain_iters", "early_gain_target"),
    ("implicit_iters",),
    ("distill_weight", "distill_depth"),
    ("teacher_checkpoint",),
)


def run_hash(config: EqLMConfig, settings: TrainSettings, corpus_sha: str) -> str:
    """What a resumed run must share with the run it continues (everything but the safety stops)."""
    s = settings.to_dict()
    for key in ("max_minutes", "checkpoint_minutes", "checkpoint_steps", "threads", "stop_after"):
        s.pop(key)
    for keys in ADDED_LATER:  # off, they leave the hash as it was before they existed
        if not s[keys[0]]:
            for key in keys:
                del s[key]
    for key in ("init_checkpoint", "teacher_checkpoint"):  # a checkpoint is named by its content, not its path
        if s.get(key):
            s[key] = hashlib.sha256(Path(s[key]).read_bytes()).hexdigest()
    blob = json.dumps({"config": config.to_dict(), "settings": s, "corpus": corpus_sha}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def load_training_corpus(settings: TrainSettings, corpus_path: Path | None) -> tuple[bytes, str, str]:
    """(bytes, sha256, description) of the corpus named by settings.corpus (or a plain text file)."""
    if corpus_path:
        data, sha = load_corpus(corpus_path)
        return data, sha, f"plain text file {Path(corpus_path).name}"
    if settings.corpus == "code":
        from .corpus import CODE_CORPUS_NAME, load_code_corpus

        data, sha = load_code_corpus()
        return data, sha, CODE_CORPUS_NAME
    data, sha = load_corpus(None)
    return data, sha, CORPUS_NAME


def train(
    config: EqLMConfig,
    settings: TrainSettings,
    out_dir: Path,
    corpus_path: Path | None = None,
    log: Callable[[str], None] = print,
) -> Path:
    """Train to `settings.steps`, resuming from out_dir/state.pt when it belongs to the same run.

    Writes out_dir/state.pt (model, optimizer, step) every `checkpoint_steps` and out_dir/latest.pt (a portal
    checkpoint with provenance) every `checkpoint_minutes` and at the end.
    """
    if settings.objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {settings.objective!r}; expected one of {OBJECTIVES}")
    if settings.grad_iters <= 0 and (settings.random_init_prob or settings.warm_init_prob or settings.settled_weight):
        raise ValueError("random and warm initial states need the no-gradient solve: set grad_iters > 0")
    if settings.early_gain_weight and (settings.grad_iters <= 0 or min(settings.early_gain_iters, default=0) < 1):
        raise ValueError("the early-gain penalty needs grad_iters > 0 and iterates k >= 1")
    if (settings.implicit_iters or settings.distill_weight) and settings.grad_iters <= 0:
        raise ValueError("the implicit gradient and distillation need the no-gradient solve: set grad_iters > 0")
    if settings.teacher_checkpoint and not settings.distill_weight:
        raise ValueError("a teacher checkpoint needs --distill-weight > 0")
    if settings.implicit_iters < 0 or settings.distill_depth < 1:
        raise ValueError("implicit_iters must be >= 0 and distill_depth >= 1")
    torch.set_num_threads(settings.threads)
    torch.manual_seed(settings.seed)
    data, sha, corpus_name = load_training_corpus(settings, corpus_path)
    train_bytes, heldout = split(data)
    train_arr = torch.from_numpy(np.frombuffer(train_bytes, dtype=np.uint8).astype(np.int64))
    init_sha = None
    if settings.init_checkpoint:
        from .checkpoint import load_checkpoint

        init_model, init_data = load_checkpoint(settings.init_checkpoint)
        config = init_model.config
        init_sha = hashlib.sha256(Path(settings.init_checkpoint).read_bytes()).hexdigest()
    model = EqLM(config)
    if settings.init_checkpoint:
        model.load_state_dict(init_model.state_dict())
    teacher_model, teacher_sha = None, None
    if settings.teacher_checkpoint:
        from .checkpoint import load_checkpoint

        teacher_model, _ = load_checkpoint(settings.teacher_checkpoint)
        teacher_model.eval().requires_grad_(False)
        teacher_sha = hashlib.sha256(Path(settings.teacher_checkpoint).read_bytes()).hexdigest()
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": settings.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=settings.lr,
        betas=(0.9, 0.98),
    )
    out_dir = Path(out_dir)
    latest, state_path = out_dir / "latest.pt", out_dir / "state.pt"
    tokens_per_step = settings.batch_size * settings.seq_len
    commit = git_commit()
    step, trained_seconds, total = 0, 0.0, settings.steps
    this_run = run_hash(config, settings, sha)
    if state_path.exists():
        state = torch.load(state_path, map_location="cpu", weights_only=True)
        if state["run_hash"] != this_run:
            raise ValueError(
                f"{state_path} belongs to another run (hash {state['run_hash']}, this one {this_run}): "
                "use another --out or delete it"
            )
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        step, trained_seconds, total = state["step"], state["train_seconds"], state["planned_steps"]
        log(f"resumed at step {step}/{total} ({trained_seconds:.0f} s trained so far)")
    log(f"EqLM {model.num_params():,} params, corpus {len(data):,} bytes sha256 {sha}, held-out {len(heldout):,}")
    log(f"objective {settings.objective}, run hash {this_run}, config hash {config.config_hash()}")
    started = time.time()
    last_ckpt = started

    def provenance(metrics: dict | None = None) -> dict:
        return {
            "config_hash": config.config_hash(),
            "run_hash": this_run,
            "git_commit": commit,
            "seed": settings.seed,
            "corpus": corpus_name,
            "corpus_sha256": sha,
            "steps": step,
            "tokens": step * tokens_per_step,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "train_seconds": round(trained_seconds + time.time() - started, 1),
            "train_settings": settings.to_dict(),
            "planned_steps": total,
            "lr_schedule": "linear warmup, then cosine to min_lr_ratio over planned_steps (by step, not wall clock)",
            "heldout_fraction": 0.05,
            "metrics": metrics or {},
            **({"init_checkpoint_sha256": init_sha} if init_sha else {}),
            **({"teacher_checkpoint_sha256": teacher_sha} if teacher_sha else {}),
        }

    def save_state() -> None:
        _atomic_torch_save(
            {
                "run_hash": this_run,
                "model": model.state_dict(),
                "optimizer": opt.state_dict(),
                "step": step,
                "planned_steps": total,
                "train_seconds": trained_seconds + time.time() - started,
            },
            state_path,
        )

    model.train()
    while total is None or step < total:
        if settings.stop_after is not None and step >= settings.stop_after:
            log(f"stopped at step {step} as asked (resume to finish the schedule)")
            break
        if time.time() - started > settings.max_minutes * 60:
            log(f"safety stop after {settings.max_minutes} minutes at step {step} (resume to finish the schedule)")
            break
        if total is None and step == 30:
            rate = 30 / (time.time() - started)
            total = max(step + 1, int(rate * settings.max_minutes * 60 * 0.9))
            log(f"throughput {rate * tokens_per_step:,.0f} tokens/s; planning {total:,} steps")
        lr = lr_at(step, total or 10**9, settings)
        for group in opt.param_groups:
            group["lr"] = lr
        rng = np.random.default_rng([settings.seed, step])
        gen = torch.Generator().manual_seed(int(rng.integers(0, 2**62)))
        starts = rng.integers(0, len(train_arr) - settings.seq_len - 1, size=settings.batch_size)
        idx = torch.from_numpy(starts)[:, None] + torch.arange(settings.seq_len + 1)[None, :]
        batch = train_arr[idx]
        if settings.objective == "unrolled":
            depths = config.train_depths
            residual_weight = settings.residual_weight
            if settings.sample_depths:
                deepest = int(rng.choice(depths))
                depths = [d for d in depths if d <= deepest]
                residual_weight = residual_weight if deepest == max(config.train_depths) else 0.0
            loss, raw = anytime_loss(model, batch[:, :-1], batch[:, 1:], depths, residual_weight)
            parts = {f"d{d}": v.detach() for d, v in raw.items()}
        else:
            solve_depth = int(rng.integers(settings.solve_depth_min, settings.solve_depth_max + 1))
            random_init = bool(rng.random() < settings.random_init_prob)
            # drawn only when asked for, so that runs without it keep their batches, depths and noise
            warm_init = bool(settings.warm_init_prob and rng.random() < settings.warm_init_prob)
            ramp = min(1.0, step / settings.penalty_warmup_steps) if settings.penalty_warmup_steps else 1.0
            settled_iters = 0
            if settings.settled_weight:  # drawn only when asked for, as warm_init
                settled_iters = int(rng.integers(settings.settled_iters_min, settings.settled_iters_max + 1))
            loss, parts = equilibrium_loss(
                model,
                batch[:, :-1],
                batch[:, 1:],
                settings,
                solve_depth,
                gen,
                random_init,
                ramp,
                warm_init,
                settled_iters,
                teacher_model,
            )
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        if step % 50 == 0 or step == 1:
            shown = " ".join(
                f"{k}={v.item() / LN2:.3f}" if k.startswith(("d", "eq", "kd")) else f"{k}={v.item():.4f}"
                for k, v in parts.items()
            )
            rate = (step * tokens_per_step) / (trained_seconds + time.time() - started)
            log(f"step {step}/{total or '?'} lr {lr:.2e} loss {loss.item():.4f} {shown} {rate:,.0f} tok/s")
        if step % settings.checkpoint_steps == 0:
            save_state()
        if time.time() - last_ckpt > settings.checkpoint_minutes * 60:
            model.eval()
            quick = quick_convergence(model, heldout, [4, 8, 12, 32], settings.seq_len, settings.eval_bytes // 4)
            model.train()
            log(
                f"checkpoint at step {step}: "
                + " ".join(f"d{d}={v['bpb']:.3f}/{100 * v['converged']:.0f}%" for d, v in quick.items())
            )
            save_checkpoint(model, latest, provenance({"heldout_quick": {str(k): v for k, v in quick.items()}}))
            last_ckpt = time.time()
    save_state()
    model.eval()
    quick = quick_convergence(model, heldout, [4, 8, 12, 16, 32, 64], settings.seq_len, settings.eval_bytes)
    log(
        "held-out bpb/converged "
        + " ".join(f"d{d}={v['bpb']:.3f}/{100 * v['converged']:.0f}%" for d, v in quick.items())
    )
    save_checkpoint(model, latest, provenance({"heldout_quick": {str(k): v for k, v in quick.items()}}))
    log(f"done: {step} steps, {step * tokens_per_step:,} tokens -> {latest}")
    return latest
