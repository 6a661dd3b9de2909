"""The training loop over a resolved recipe stage: resumable, scheduled by step, with its provenance.

Everything a step uses (its batch, its drawn depth, its start, its terms' draws and noise) comes from a generator
seeded by (seed, step), and the learning-rate schedule depends on the step count alone, so a run stopped at any point
and started again from its last state gives the same model as an uninterrupted run, on the same threads and device.
No Django imports here.
"""

from __future__ import annotations

import hashlib
import json
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


def run_hash(stage: Stage, corpus_sha: str, init_sha: str | None, teacher_sha: str | None) -> str:
    """What a resumed run must share with the run it continues: the resolved stage and the content it reads."""
    blob = json.dumps(
        {"stage": stage.hashed(), "corpus": corpus_sha, "init": init_sha, "teacher": teacher_sha}, sort_keys=True
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


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


def finished_checkpoint(state: dict, latest: Path, total: int) -> Path | None:
    """The stage's final checkpoint when its saved state already ran all `total` steps of its run, else None."""
    if state["step"] < total or not latest.exists():
        return None
    done = torch.load(latest, map_location="cpu", weights_only=True)["provenance"]
    return latest if done.get("run_hash") == state["run_hash"] and done.get("steps") == state["step"] else None


def hand_over(state_path: Path, threads: int, device: str) -> dict:
    """Let an unfinished run go on with other threads or on another device, and record it in the state.

    A resume keeps its threads and device, so that a stopped and resumed run equals an uninterrupted one bit for bit.
    A run handed over gives that up knowingly: the handover (from, to, at which step) is kept in the state and in every
    checkpoint's provenance from then on. Returns the handover recorded.
    """
    state = torch.load(state_path, map_location="cpu", weights_only=True)
    to = {"threads": threads, "device": device}
    if state.get("identity") == to:
        raise ValueError(f"{state_path} already trains on {to}: nothing to hand over")
    record = {"step": state["step"], "from": state.get("identity"), "to": to}
    state["handovers"] = [*state.get("handovers", []), record]
    state["identity"] = to
    atomic_torch_save(state, Path(state_path))
    return record


def _cpu(tree):
    """A state dict's tensors on the CPU, so a run saved on an accelerator loads anywhere."""
    if isinstance(tree, torch.Tensor):
        return tree.detach().cpu()
    if isinstance(tree, dict):
        return {k: _cpu(v) for k, v in tree.items()}
    if isinstance(tree, list | tuple):
        return type(tree)(_cpu(v) for v in tree)
    return tree


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
    data, corpus_sha, corpus_name = load_training_corpus(stage)
    train_bytes, heldout = split(data, HELDOUT_FRACTION)
    train_arr = torch.from_numpy(np.frombuffer(train_bytes, dtype=np.uint8).astype(np.int64))
    init_sha = teacher_sha = None
    model_class, config = model_config(stage)
    if init_checkpoint is not None:
        init_model, _ = load_checkpoint(init_checkpoint)
        model_class, config = init_model.model_class, init_model.config
        init_sha = sha256_file(init_checkpoint)
    model = build_model(model_class, config.to_dict())
    if init_checkpoint is not None:
        model.load_state_dict(init_model.state_dict())
    model.to(device)  # built and initialised on the CPU, so a seed gives the same initial weights on every device
    teacher = None
    if stage.teacher is not None:
        teacher, _ = load_checkpoint(stage.teacher)
        teacher.eval().requires_grad_(False).to(device)
        teacher_sha = sha256_file(stage.teacher)
    schedule = stage.data["schedule"]
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": schedule["weight_decay"]}, {"params": no_decay, "weight_decay": 0.0}],
        lr=schedule["lr"],
        betas=(0.9, 0.98),
    )
    out_dir = Path(out_dir)
    latest, state_path = out_dir / "latest.pt", out_dir / "state.pt"
    batch_size, seq_len = stage.data["batch_size"], stage.data["seq_len"]
    tokens_per_step = batch_size * seq_len
    commit = git_commit()
    step, trained_seconds, total = 0, 0.0, stage.steps
    this_run = run_hash(stage, corpus_sha, init_sha, teacher_sha)
    identity = {"threads": threads, "device": device}
    handovers: list[dict] = []  # where a run moved to other threads or another device mid-way (hand_over)
    if state_path.exists():
        state = torch.load(state_path, map_location="cpu", weights_only=True)
        if state["run_hash"] != this_run:
            raise ValueError(
                f"{state_path} belongs to another run (hash {state['run_hash']}, this one {this_run}): "
                "use another --out or delete it"
            )
        # nothing left to train, so the threads and device it ran on do not matter
        if finished_checkpoint(state, latest, total) is not None:
            log(f"stage {stage.name} finished before ({state['step']} steps, on {state.get('identity')}): {latest}")
            return TrainOutcome(True, state["step"], total, latest, state_path)
        if state.get("identity", identity) != identity:
            raise ValueError(
                f"{state_path} was trained on {state['identity']}, this resume asks for {identity}: floating-point "
                "results differ across threads and devices, so a resume keeps them"
            )
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        step, trained_seconds = state["step"], state["train_seconds"]
        handovers = list(state.get("handovers", []))
        log(f"resumed at step {step}/{total} ({trained_seconds:.0f} s trained so far)")
    log(f"{model_class} {model.num_params():,} params, corpus {len(data):,} bytes sha256 {corpus_sha}")
    log(f"recipe {stage.recipe_name}, stage {stage.name}, recipe hash {stage.recipe_hash}, run hash {this_run}")
    started = time.time()
    last_ckpt = started

    def seconds() -> float:
        return trained_seconds + time.time() - started

    def provenance(metrics: dict | None = None) -> dict:
        return {
            "config_hash": config.config_hash(),
            "run_hash": this_run,
            "recipe": stage.recipe_name,
            "stage": stage.name,
            "recipe_hash": stage.recipe_hash,
            "resolved_stage": stage.to_dict(),
            "overrides": list(stage.overrides),
            "git_commit": commit,
            "seed": stage.seed,
            "corpus": corpus_name,
            "corpus_sha256": corpus_sha,
            "steps": step,
            "tokens": step * tokens_per_step,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "train_seconds": round(seconds(), 1),
            "threads": threads,
            "device": device,
            "planned_steps": total,
            **({"handovers": handovers} if handovers else {}),
            "lr_schedule": "linear warmup, then cosine to min_lr_ratio over planned_steps (by step, not wall clock)",
            "heldout_fraction": HELDOUT_FRACTION,
            "metrics": metrics or {},
            **({"init_checkpoint_sha256": init_sha} if init_sha else {}),
            **({"teacher_checkpoint_sha256": teacher_sha} if teacher_sha else {}),
        }

    def save_state() -> None:
        payload = {"run_hash": this_run, "identity": identity, "model": _cpu(model.state_dict())}
        if handovers:
            payload["handovers"] = handovers
        payload.update({"optimizer": _cpu(opt.state_dict()), "step": step, "planned_steps": total})
        payload["train_seconds"] = seconds()
        atomic_torch_save(payload, state_path)

    def report(loss: float) -> None:
        if progress is not None:
            rate = (step - first_step) / max(time.time() - started, 1e-9)
            eta = (total - step) / rate if rate > 0 else None
            progress({"step": step, "planned_steps": total, "loss": loss, "seconds": seconds(), "eta_seconds": eta})

    first_step = step
    ramp_steps = schedule["penalty_warmup_steps"]
    model.train()
    stopped = False
    while step < total:
        if stop_after is not None and step >= stop_after:
            log(f"stopped at step {step} as asked (resume to finish the schedule)")
            stopped = True
            break
        if max_minutes is not None and time.time() - started > max_minutes * 60:
            log(f"stopped after {max_minutes} minutes at step {step} (resume to finish the schedule)")
            stopped = True
            break
        lr = lr_at(step, total, schedule)
        for group in opt.param_groups:
            group["lr"] = lr
        rng = np.random.default_rng([stage.seed, step])
        gen = torch.Generator().manual_seed(int(rng.integers(0, 2**62)))
        starts = rng.integers(0, len(train_arr) - seq_len - 1, size=batch_size)
        idx = torch.from_numpy(starts)[:, None] + torch.arange(seq_len + 1)[None, :]
        batch = train_arr[idx].to(device)
        draws = draw_step(stage.data, rng)
        ramp = min(1.0, step / ramp_steps) if ramp_steps else 1.0
        loss, parts = forward_step(model, batch[:, :-1], batch[:, 1:], stage.data, draws, gen, ramp, teacher)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), schedule["grad_clip"])
        opt.step()
        step += 1
        if step % 50 == 0 or step == 1:
            shown = " ".join(
                f"{k}={v.item() / LN2:.3f}"
                if k.startswith(("d", "eq", "kd", "warm", "prog"))
                else f"{k}={v.item():.4f}"
                for k, v in parts.items()
            )
            rate = (step * tokens_per_step) / seconds()
            log(f"step {step}/{total} lr {lr:.2e} loss {loss.item():.4f} {shown} {rate:,.0f} tok/s")
        if step % 10 == 0:
            report(loss.item())
        if step % checkpoint_steps == 0:
            save_state()
        if time.time() - last_ckpt > checkpoint_minutes * 60:
            model.eval()
            quick = quick_convergence(model, heldout, CHECK_DEPTHS, seq_len, eval_bytes // 4)
            model.train()
            log(
                f"checkpoint at step {step}: "
                + " ".join(f"d{d}={v['bpb']:.3f}/{100 * v['converged']:.0f}%" for d, v in quick.items())
            )
            save_checkpoint(model, latest, provenance({"heldout_quick": {str(k): v for k, v in quick.items()}}))
            last_ckpt = time.time()
    save_state()
    report(float("nan") if step == first_step else loss.item())
    if stopped:
        return TrainOutcome(False, step, total, None, state_path)
    model.eval()
    quick = quick_convergence(model, heldout, FINAL_DEPTHS, seq_len, eval_bytes)
    log(
        "held-out bpb/converged "
        + " ".join(f"d{d}={v['bpb']:.3f}/{100 * v['converged']:.0f}%" for d, v in quick.items())
    )
    save_checkpoint(model, latest, provenance({"heldout_quick": {str(k): v for k, v in quick.items()}}))
    log(f"done: {step} steps, {step * tokens_per_step:,} tokens -> {latest}")
    return TrainOutcome(True, step, total, latest, state_path)


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
