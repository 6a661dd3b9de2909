"""Anytime training of the demo EqLM: cross-entropy on the unrolled iterates at several depths (as in F24)."""

from __future__ import annotations

import math
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from .checkpoint import save_checkpoint
from .corpus import CORPUS_NAME, load_corpus, split
from .model import EqLM, EqLMConfig, relative_residual

LN2 = math.log(2)


@dataclass
class TrainSettings:
    seed: int = 0
    batch_size: int = 8
    seq_len: int = 256
    lr: float = 3e-3
    min_lr_ratio: float = 0.1
    warmup_steps: int = 100
    weight_decay: float = 0.05
    steps: int | None = None  # None: derived from the time budget after measuring throughput
    max_minutes: float = 60.0
    checkpoint_minutes: float = 5.0
    residual_weight: float = 0.1
    sample_depths: bool = True  # per step, draw the deepest supervised depth; loss at every supervised depth <= it
    eval_bytes: int = 32768
    threads: int = 2


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True, timeout=10)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def lr_at(step: int, total: int, s: TrainSettings, time_fraction: float = 0.0) -> float:
    """Linear warmup, then cosine to min_lr_ratio over max(step progress, wall-clock progress).

    Following the wall clock too means the rate is annealed when the time budget ends a run early on a busy
    machine; with an ample budget the schedule depends on the step count only (deterministic from the seed).
    """
    if step < s.warmup_steps:
        return s.lr * (step + 1) / s.warmup_steps
    frac = min(1.0, max((step - s.warmup_steps) / max(1, total - s.warmup_steps), time_fraction))
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


@torch.no_grad()
def bits_per_byte(model: EqLM, data: bytes, depths: list[int], seq_len: int, max_bytes: int | None = None) -> dict:
    """Held-out bits/byte per depth over non-overlapping windows (each window's first byte is context only)."""
    arr = np.frombuffer(data[:max_bytes] if max_bytes else data, dtype=np.uint8).astype(np.int64)
    n = (len(arr) // seq_len) * seq_len
    windows = torch.from_numpy(arr[:n].reshape(-1, seq_len))
    totals = dict.fromkeys(depths, 0.0)
    count = 0
    for chunk in windows.split(32):
        out = model.solve(chunk[:, :-1], max_iter=max(depths), depths=depths)
        for d in depths:
            totals[d] += F.cross_entropy(out.logits[d].flatten(0, 1), chunk[:, 1:].flatten(), reduction="sum").item()
        count += chunk[:, 1:].numel()
    return {d: totals[d] / count / LN2 for d in depths}


def train(
    config: EqLMConfig,
    settings: TrainSettings,
    out_dir: Path,
    corpus_path: Path | None = None,
    log: Callable[[str], None] = print,
) -> Path:
    """Train until `steps` or the wall-clock budget; checkpoints every few minutes and at the end."""
    torch.set_num_threads(settings.threads)
    torch.manual_seed(settings.seed)
    rng = np.random.default_rng(settings.seed)
    data, sha = load_corpus(corpus_path)
    train_bytes, heldout = split(data)
    train_arr = torch.from_numpy(np.frombuffer(train_bytes, dtype=np.uint8).astype(np.int64))
    model = EqLM(config)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": settings.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=settings.lr,
        betas=(0.9, 0.98),
    )
    log(f"EqLM {model.num_params():,} params, corpus {len(data):,} bytes sha256 {sha}, held-out {len(heldout):,}")
    commit = git_commit()
    started = time.time()
    budget = settings.max_minutes * 60
    total = settings.steps
    tokens_per_step = settings.batch_size * settings.seq_len
    last_ckpt = started
    out_dir = Path(out_dir)
    latest = out_dir / "latest.pt"
    step = 0

    def provenance(step_count: int, metrics: dict | None = None) -> dict:
        return {
            "config_hash": config.config_hash(),
            "git_commit": commit,
            "seed": settings.seed,
            "corpus": CORPUS_NAME,
            "corpus_sha256": sha,
            "steps": step_count,
            "tokens": step_count * tokens_per_step,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "train_seconds": round(time.time() - started, 1),
            "train_settings": dict(settings.__dict__),
            "planned_steps": total,
            "lr_schedule": "warmup, then cosine over max(step/planned_steps, elapsed/max_minutes)",
            "heldout_fraction": 0.05,
            "metrics": metrics or {},
        }

    while total is None or step < total:
        elapsed = time.time() - started
        if elapsed > budget:
            log(f"time budget reached at step {step}")
            break
        if total is None and step == 30:
            rate = step / elapsed
            total = max(step + 1, int(rate * budget * 0.75))
            log(f"throughput {rate * tokens_per_step:,.0f} tokens/s; planning {total:,} steps")
        lr = lr_at(step, total or 10**9, settings, elapsed / budget)
        for group in opt.param_groups:
            group["lr"] = lr
        starts = rng.integers(0, len(train_arr) - settings.seq_len - 1, size=settings.batch_size)
        idx = torch.from_numpy(starts)[:, None] + torch.arange(settings.seq_len + 1)[None, :]
        batch = train_arr[idx]
        depths = config.train_depths
        residual_weight = settings.residual_weight
        if settings.sample_depths:
            deepest = int(rng.choice(depths))
            depths = [d for d in depths if d <= deepest]
            residual_weight = residual_weight if deepest == max(config.train_depths) else 0.0
        loss, parts = anytime_loss(model, batch[:, :-1], batch[:, 1:], depths, residual_weight)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        if step % 50 == 0 or step == 1:
            bpb = " ".join(f"d{d}={v.item() / LN2:.3f}" for d, v in parts.items())
            rate = step * tokens_per_step / (time.time() - started)
            log(f"step {step}/{total or '?'} lr {lr:.2e} loss {loss.item():.4f} train bpb {bpb} {rate:,.0f} tok/s")
        if time.time() - last_ckpt > settings.checkpoint_minutes * 60:
            model.eval()
            metrics = bits_per_byte(model, heldout, [2, 4, 8, 12], settings.seq_len, settings.eval_bytes // 4)
            model.train()
            log(f"checkpoint at step {step}: held-out bpb " + " ".join(f"d{d}={v:.3f}" for d, v in metrics.items()))
            save_checkpoint(model, latest, provenance(step, {"heldout_bpb_quick": metrics}))
            last_ckpt = time.time()
    model.eval()
    metrics = bits_per_byte(model, heldout, list(range(1, 13)), settings.seq_len, settings.eval_bytes)
    log("final held-out bpb " + " ".join(f"d{d}={v:.3f}" for d, v in metrics.items()))
    save_checkpoint(model, latest, provenance(step, {"heldout_bpb_quick": metrics}))
    log(f"done: {step} steps, {step * tokens_per_step:,} tokens, {time.time() - started:.0f} s -> {latest}")
    return latest
