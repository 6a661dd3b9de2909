"""The training loop over a resolved recipe stage: resumable, scheduled by step, with its provenance.

Everything a step uses (its batch, its drawn depth, its start, its terms' draws and noise) comes from a generator
seeded by (seed, step), and the learning-rate schedule depends on the step count alone, so a run stopped at any point
and started again from its last state gives the same model as an uninterrupted run, on the same threads and device.
No Django imports here.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import torch

from .checkpoint import load_checkpoint, save_checkpoint
from .corpus import CORPUS_NAME, HELDOUT_FRACTION, load_corpus, split
from .model import EqLMConfig, build_model
from .objective import draw_step, forward_step
from .provenance import atomic_torch_save, git_commit, sha256_file
from .recipe import Stage
from .train_state import _cpu, finished_checkpoint, run_hash
from .train_state import hand_over as hand_over  # a handover of an unfinished run (experiments_app imports it here)
from .units import LN2

CHECK_DEPTHS = [4, 8, 12, 32]  # the held-out check at each checkpoint
FINAL_DEPTHS = [4, 8, 12, 16, 32, 64]
BITS_PARTS = ("d", "eq", "kd", "warm", "prog")  # logged parts that are cross-entropies, shown in bits


@dataclass
class TrainOutcome:
    finished: bool
    step: int
    planned_steps: int
    checkpoint: Path | None
    state_path: Path


def lr_at(step: int, total: int, schedule: dict) -> float:
    """Linear warmup, then cosine to min_lr_ratio over the planned steps (a function of the step alone)."""
    lr, warmup = schedule["lr"], schedule["warmup_steps"]
    if step < warmup:
        return lr * (step + 1) / warmup
    frac = min(1.0, (step - warmup) / max(1, total - warmup))
    return lr * (schedule["min_lr_ratio"] + (1 - schedule["min_lr_ratio"]) * 0.5 * (1 + math.cos(math.pi * frac)))


def load_training_corpus(stage: Stage) -> tuple[bytes, str, str]:
    """(bytes, sha256, description) of the stage's corpus: a named one, or a plain text file."""
    if stage.corpus_file is not None:
        data, sha = load_corpus(stage.corpus_file)
        return data, sha, f"plain text file {stage.corpus_file.name}"
    if stage.data["corpus"]["name"] == "code":
        from .corpus import CODE_CORPUS_NAME, load_code_corpus

        data, sha = load_code_corpus()
        return data, sha, CODE_CORPUS_NAME
    data, sha = load_corpus(None)
    return data, sha, CORPUS_NAME


def model_config(stage: Stage) -> tuple[str, EqLMConfig]:
    model = dict(stage.data["model"])
    return model.pop("class"), EqLMConfig(**model)


def quick_convergence(model, data: bytes, depths: list[int], seq_len: int, max_bytes: int, tol: float = 0.01):
    """Held-out bits/byte and the share of positions with relative residual < tol, per depth (Picard from zero).

    The figures of `eqlm.convergence.profile_by_depth` (the evaluation's own measurement) on the first max_bytes. An
    explicit transformer has one depth, its layer count, and no residual.
    """
    from .convergence import windows_of

    device = str(next(model.parameters()).device)
    if model.model_class == "ExplicitLM":
        import copy

        from .explicit_bpb import explicit_bits_per_byte

        on_cpu = model if device == "cpu" else copy.deepcopy(model).cpu()
        bpb, _ = explicit_bits_per_byte(on_cpu, windows_of(data[:max_bytes], seq_len + 1), batch=32)
        return {len(model.layers): {"bpb": bpb, "converged": 0.0}}
    from .convergence import TorchBackend, profile_by_depth, tolerance_key

    windows = windows_of(data[:max_bytes], seq_len)
    profile = profile_by_depth(
        TorchBackend(model, device=device), windows, max_depth=max(depths), tolerances=(tol,), batch=32
    )
    key = tolerance_key(tol)
    figures = {d: profile.by_depth[d] for d in depths}
    # plain floats: the figures go into the checkpoint's provenance, which weights_only loading reads back
    return {d: {"bpb": float(f.bits_per_byte), "converged": float(f.converged[key])} for d, f in figures.items()}


def resolve_device(device: str) -> str:
    """The device a run trains on: the one asked for, or the CPU on a machine without an accelerator (as the
    evaluations fall back)."""
    return device if device == "cpu" or torch.cuda.is_available() else "cpu"


def _optimizer(model, schedule: dict) -> torch.optim.AdamW:
    """AdamW with weight decay on the matrices only."""
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": schedule["weight_decay"]}, {"params": no_decay, "weight_decay": 0.0}],
        lr=schedule["lr"],
        betas=(0.9, 0.98),
    )


def _shown(quick: dict) -> str:
    """Held-out figures per depth as the log shows them: d<depth>=<bits/byte>/<converged %>."""
    return " ".join(f"d{d}={v['bpb']:.3f}/{100 * v['converged']:.0f}%" for d, v in quick.items())


class _Run:
    """One call of train_stage: its model, optimizer and data, and the step and clock its saves and reports read."""

    def __init__(self, stage: Stage, init_checkpoint: Path | None, threads: int, device: str, out_dir: Path):
        self.stage, self.threads, self.device = stage, threads, device
        self.data, self.corpus_sha, self.corpus_name = load_training_corpus(stage)
        train_bytes, self.heldout = split(self.data, HELDOUT_FRACTION)
        self.train_arr = torch.from_numpy(np.frombuffer(train_bytes, dtype=np.uint8).astype(np.int64))
        self.init_sha = self.teacher_sha = None
        self.model_class, self.config = model_config(stage)
        if init_checkpoint is not None:
            init_model, _ = load_checkpoint(init_checkpoint)
            self.model_class, self.config = init_model.model_class, init_model.config
            self.init_sha = sha256_file(init_checkpoint)
        self.model = build_model(self.model_class, self.config.to_dict())
        if init_checkpoint is not None:
            self.model.load_state_dict(init_model.state_dict())
        self.model.to(device)  # built and initialised on the CPU, so a seed gives the same initial weights everywhere
        self.teacher = None
        if stage.teacher is not None:
            self.teacher, _ = load_checkpoint(stage.teacher)
            self.teacher.eval().requires_grad_(False).to(device)
            self.teacher_sha = sha256_file(stage.teacher)
        self.schedule = stage.data["schedule"]
        self.opt = _optimizer(self.model, self.schedule)
        self.ramp_steps = self.schedule["penalty_warmup_steps"]
        self.latest, self.state_path = out_dir / "latest.pt", out_dir / "state.pt"
        self.batch_size, self.seq_len = stage.data["batch_size"], stage.data["seq_len"]
        self.tokens_per_step = self.batch_size * self.seq_len
        self.commit = git_commit()
        self.step, self.trained_seconds, self.total = 0, 0.0, stage.steps
        self.run_hash = run_hash(stage, self.corpus_sha, self.init_sha, self.teacher_sha)
        self.identity = {"threads": threads, "device": device}
        self.handovers: list[dict] = []  # where a run moved to other threads or another device mid-way (hand_over)
        self.started = self.first_step = None

    def resume(self, log: Callable[[str], None]) -> bool:
        """Load out_dir/state.pt when it belongs to this run; True when that run already finished."""
        state_path = self.state_path
        state = torch.load(state_path, map_location="cpu", weights_only=True)
        if state["run_hash"] != self.run_hash:
            raise ValueError(
                f"{state_path} belongs to another run (hash {state['run_hash']}, this one {self.run_hash}): "
                "use another --out or delete it"
            )
        # nothing left to train, so the threads and device it ran on do not matter
        if finished_checkpoint(state, self.latest, self.total) is not None:
            log(
                f"stage {self.stage.name} finished before ({state['step']} steps, on {state.get('identity')}): "
                f"{self.latest}"
            )
            self.step = state["step"]
            return True
        if state.get("identity", self.identity) != self.identity:
            raise ValueError(
                f"{state_path} was trained on {state['identity']}, this resume asks for {self.identity}: "
                "floating-point results differ across threads and devices, so a resume keeps them"
            )
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["optimizer"])
        self.step, self.trained_seconds = state["step"], state["train_seconds"]
        self.handovers = list(state.get("handovers", []))
        log(f"resumed at step {self.step}/{self.total} ({self.trained_seconds:.0f} s trained so far)")
        return False

    def seconds(self) -> float:
        return self.trained_seconds + time.time() - self.started

    def provenance(self, metrics: dict | None = None) -> dict:
        stage, init_sha, teacher_sha = self.stage, self.init_sha, self.teacher_sha
        return {
            "config_hash": self.config.config_hash(),
            "run_hash": self.run_hash,
            "recipe": stage.recipe_name,
            "stage": stage.name,
            "recipe_hash": stage.recipe_hash,
            "resolved_stage": stage.to_dict(),
            "overrides": list(stage.overrides),
            "git_commit": self.commit,
            "seed": stage.seed,
            "corpus": self.corpus_name,
            "corpus_sha256": self.corpus_sha,
            "steps": self.step,
            "tokens": self.step * self.tokens_per_step,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "train_seconds": round(self.seconds(), 1),
            "threads": self.threads,
            "device": self.device,
            "planned_steps": self.total,
            **({"handovers": self.handovers} if self.handovers else {}),
            "lr_schedule": "linear warmup, then cosine to min_lr_ratio over planned_steps (by step, not wall clock)",
            "heldout_fraction": HELDOUT_FRACTION,
            "metrics": metrics or {},
            **({"init_checkpoint_sha256": init_sha} if init_sha else {}),
            **({"teacher_checkpoint_sha256": teacher_sha} if teacher_sha else {}),
        }

    def save_state(self) -> None:
        payload = {"run_hash": self.run_hash, "identity": self.identity, "model": _cpu(self.model.state_dict())}
        if self.handovers:
            payload["handovers"] = self.handovers
        payload.update({"optimizer": _cpu(self.opt.state_dict()), "step": self.step, "planned_steps": self.total})
        payload["train_seconds"] = self.seconds()
        atomic_torch_save(payload, self.state_path)

    def report(self, progress: Callable[[dict], None] | None, loss: float) -> None:
        if progress is not None:
            step, total = self.step, self.total
            rate = (step - self.first_step) / max(time.time() - self.started, 1e-9)
            eta = (total - step) / rate if rate > 0 else None
            progress(
                {"step": step, "planned_steps": total, "loss": loss, "seconds": self.seconds(), "eta_seconds": eta}
            )

    def train_step(self) -> tuple[torch.Tensor, dict, float]:
        """One optimizer step, everything it draws from a generator seeded by (seed, step): (loss, parts, lr)."""
        stage, step, schedule, seq_len = self.stage, self.step, self.schedule, self.seq_len
        lr = lr_at(step, self.total, schedule)
        for group in self.opt.param_groups:
            group["lr"] = lr
        rng = np.random.default_rng([stage.seed, step])
        gen = torch.Generator().manual_seed(int(rng.integers(0, 2**62)))
        starts = rng.integers(0, len(self.train_arr) - seq_len - 1, size=self.batch_size)
        idx = torch.from_numpy(starts)[:, None] + torch.arange(seq_len + 1)[None, :]
        batch = self.train_arr[idx].to(self.device)
        draws = draw_step(stage.data, rng)
        ramp_steps = self.ramp_steps
        ramp = min(1.0, step / ramp_steps) if ramp_steps else 1.0
        loss, parts = forward_step(self.model, batch[:, :-1], batch[:, 1:], stage.data, draws, gen, ramp, self.teacher)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), schedule["grad_clip"])
        self.opt.step()
        self.step += 1
        return loss, parts, lr

    def save_checkpoint(self, quick: dict) -> None:
        """A fresh latest.pt with the held-out figures `quick` in its provenance."""
        provenance = self.provenance({"heldout_quick": {str(k): v for k, v in quick.items()}})
        save_checkpoint(self.model, self.latest, provenance)

    def train(self, stop_after, max_minutes, log, progress, checkpoint_steps, checkpoint_minutes, eval_bytes):
        """The steps until the planned total or a stop; returns (stopped, the last step's loss or None)."""
        started = last_ckpt = self.started
        loss = None
        self.model.train()
        while self.step < self.total:
            step = self.step
            if stop_after is not None and step >= stop_after:
                log(f"stopped at step {step} as asked (resume to finish the schedule)")
                return True, loss
            if max_minutes is not None and time.time() - started > max_minutes * 60:
                log(f"stopped after {max_minutes} minutes at step {step} (resume to finish the schedule)")
                return True, loss
            loss, parts, lr = self.train_step()
            step = self.step
            if step % 50 == 0 or step == 1:
                shown = " ".join(
                    f"{k}={v.item() / LN2:.3f}"
                    if k.startswith(("d", "eq", "kd", "warm", "prog"))
                    else f"{k}={v.item():.4f}"
                    for k, v in parts.items()
                )
                rate = (step * self.tokens_per_step) / self.seconds()
                log(f"step {step}/{self.total} lr {lr:.2e} loss {loss.item():.4f} {shown} {rate:,.0f} tok/s")
            if step % 10 == 0:
                self.report(progress, loss.item())
            if step % checkpoint_steps == 0:
                self.save_state()
            if time.time() - last_ckpt > checkpoint_minutes * 60:
                self.model.eval()
                quick = quick_convergence(self.model, self.heldout, CHECK_DEPTHS, self.seq_len, eval_bytes // 4)
                self.model.train()
                log(f"checkpoint at step {step}: " + _shown(quick))
                self.save_checkpoint(quick)
                last_ckpt = time.time()
        return False, loss


def train_stage(
    stage: Stage,
    out_dir: Path,
    init_checkpoint: Path | None = None,
    threads: int = 1,
    device: str = "cpu",
    max_minutes: float | None = None,
    stop_after: int | None = None,
    log: Callable[[str], None] = print,
    progress: Callable[[dict], None] | None = None,
    checkpoint_steps: int = 200,
    checkpoint_minutes: float = 5.0,
    eval_bytes: int = 32768,
) -> TrainOutcome:
    """Train `stage` to its steps, resuming from out_dir/state.pt when it belongs to the same run.

    Writes out_dir/state.pt (model, optimizer, step) every `checkpoint_steps` and at every stop, and out_dir/latest.pt
    (a portal checkpoint with provenance) every `checkpoint_minutes` and at the end. A stage whose recipe says
    `from` needs `init_checkpoint`: the caller knows where the earlier stage's checkpoint lives.
    """
    if stage.from_stage and init_checkpoint is None:
        raise ValueError(f"stage {stage.name} starts from stage {stage.from_stage}: pass its checkpoint")
    device = resolve_device(device)
    torch.set_num_threads(threads)
    torch.manual_seed(stage.seed)
    run = _Run(stage, init_checkpoint, threads, device, Path(out_dir))
    total, latest, state_path = run.total, run.latest, run.state_path
    if state_path.exists() and run.resume(log):
        return TrainOutcome(True, run.step, total, latest, state_path)
    log(f"{run.model_class} {run.model.num_params():,} params, corpus {len(run.data):,} bytes sha256 {run.corpus_sha}")
    log(f"recipe {stage.recipe_name}, stage {stage.name}, recipe hash {stage.recipe_hash}, run hash {run.run_hash}")
    run.started = time.time()
    run.first_step = run.step
    stopped, loss = run.train(stop_after, max_minutes, log, progress, checkpoint_steps, checkpoint_minutes, eval_bytes)
    run.save_state()
    run.report(progress, float("nan") if run.step == run.first_step else loss.item())
    if stopped:
        return TrainOutcome(False, run.step, total, None, state_path)
    run.model.eval()
    quick = quick_convergence(run.model, run.heldout, FINAL_DEPTHS, run.seq_len, eval_bytes)
    log("held-out bpb/converged " + _shown(quick))
    run.save_checkpoint(quick)
    log(f"done: {run.step} steps, {run.step * run.tokens_per_step:,} tokens -> {latest}")
    return TrainOutcome(True, run.step, total, latest, state_path)


def train_chain(
    recipe, out_root: Path, stage: str | None = None, overrides=(), log: Callable[[str], None] = print, **options
) -> TrainOutcome:
    """Train `stage` (default: the last) and every stage it starts from, each in out_root/<stage>, resuming each."""
    previous = None
    for name in recipe.chain(stage):
        outcome = train_stage(recipe.resolve(name, overrides), Path(out_root) / name, previous, log=log, **options)
        if not outcome.finished:
            return outcome
        previous = outcome.checkpoint
    return outcome
