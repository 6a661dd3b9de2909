"""Digests of 72835c1's own training loop (eqlm/training.py's TrainSettings and train) for the six bit-for-bit cases.

test_loop_reproduction.py's bit-for-bit tests hold one record per CPU kind. On a new kind, record its digests with
the old loop itself, never by copying what the new code prints: from the repository root,

    git worktree add /tmp/old72835c1 72835c1
    OMP_NUM_THREADS=1 PYTHONPATH=/tmp/old72835c1 .venv/bin/python eqlm/tests/old_loop_digests.py
    git worktree remove --force /tmp/old72835c1

(about 20 s; the KJV corpus must be installed). A record is added only where the new code gives the same digest.
"""

import hashlib
import sys
import tempfile
from pathlib import Path

import torch

import eqlm
from eqlm.testing import tiny_config
from eqlm.training import TrainSettings, train

OLD = Path("/tmp/old72835c1")
assert Path(eqlm.__file__).resolve().is_relative_to(OLD), eqlm.__file__  # the old code, not /work/main's
torch.set_num_threads(1)

# as in 72835c1's eqlm/tests/test_training.py (deleted by fac5821)
TEXT = b"In the beginning God created the heaven and the earth. And the earth was without form, and void.\n" * 40
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


def digest(path) -> str:  # as in eqlm/tests/tiny_training.py
    h = hashlib.sha256()
    data = torch.load(path, weights_only=True)
    state = data.get("model") or data["state_dict"]
    for key in sorted(state):
        h.update(key.encode())
        h.update(state[key].numpy().tobytes())
    return h.hexdigest()[:16]


def run_tiny(tmp: Path, **overrides) -> str:
    """72835c1's run_tiny: the tiny EqLM on the repeated text; the digest of its state.pt."""
    corpus = tmp / "corpus.txt"
    corpus.write_bytes(TEXT * 4)
    settings = TrainSettings(**{**TINY_RUN, **overrides})
    train(tiny_config(max_positions=32), settings, tmp / "run", corpus, log=lambda _: None)
    return digest(tmp / "run" / "state.pt")


# each new-code case (fac5821's recipe overrides) and the TrainSettings overrides that are the same run in the old loop
TINY_CASES = {
    # recipe: TINY_TERMS, solve {depth 3-6, grad_iters 2, start.noise 0.5}, schedule {lr 3e-3, warmup 2, penalty 300}
    "tiny": {},
    # solve {grad_iters 0, start.noise 0.0}, terms.slow_mode.weight 0.5
    "full gradient with the slow-mode term": {"grad_iters": 0, "random_init_prob": 0.0, "slow_mode_weight": 0.5},
    # solve.start {noise 0.5, warm 0.5}, terms.settled_warm.weight 0.5
    "warm starts and the settled warm term": {"random_init_prob": 0.5, "warm_init_prob": 0.5, "settled_weight": 0.5},
    # solve.implicit_iters 4, terms.early_gain.weight 0.5, terms.distill {weight 0.5, depth 2}
    "early gain, implicit gradient, self-distillation": {
        "implicit_iters": 4,
        "early_gain_weight": 0.5,
        "distill_weight": 0.5,
        "distill_depth": 2,
    },
    # solve.kind unrolled, terms anytime_ce {weight 1.0, depths [4, 8, 12]} and residual.weight 0.1, penalty warmup 0:
    # the old unrolled objective (tiny_config's train_depths [4, 8, 12], residual_weight 0.1, sample_depths)
    "unrolled": {"objective": "unrolled", "penalty_warmup_steps": 0},
}


def flat_stage(tmp: Path) -> str:
    """Three steps of eqlm-demo's last stage (72835c1's Makefile, train-demo, the eqlm-demo-flat command), from the
    served eqlm-demo.pt, as train_demo_model's handle() builds its TrainSettings (defaults for the flags not given)."""
    init = OLD / "inference" / "demo" / "eqlm-demo.pt"
    anytime = Path(__file__).resolve().parents[2] / "models" / "eqlm-demo-anytime" / "checkpoint.pt"
    assert hashlib.sha256(init.read_bytes()).digest() == hashlib.sha256(anytime.read_bytes()).digest()
    settings = TrainSettings(
        seed=0,
        batch_size=8,
        seq_len=256,  # --context default
        lr=1e-4,
        warmup_steps=20,
        penalty_warmup_steps=20,
        steps=2000,
        max_minutes=70,
        checkpoint_minutes=5.0,
        checkpoint_steps=250,
        threads=1,
        objective="equilibrium",
        anytime_depths=[4, 8, 12, 16],
        solve_depth_min=24,
        solve_depth_max=40,
        grad_iters=4,
        residual_weight=100.0,
        jacobian_weight=1.0,
        jacobian_target=0.1,
        slow_mode_weight=0.0,
        slow_mode_target=0.5,
        early_gain_weight=0.02,
        early_gain_iters=[1, 2, 3],
        early_gain_target=9.0,
        implicit_iters=32,
        distill_weight=1.0,
        distill_depth=8,
        teacher_checkpoint=str(OLD / "inference" / "demo" / "eqlm-demo-unrolled.pt"),
        random_init_prob=0.0,
        warm_init_prob=0.0,
        settled_weight=0.0,
        settled_iters_min=4,
        settled_iters_max=12,
        corpus="kjv",
        init_checkpoint=str(init),
        stop_after=3,  # the new test's stop_after=3
    )
    # train() takes the config from the init checkpoint; this one (the command's defaults) is replaced
    config = tiny_config()
    train(config, settings, tmp / "run", None, log=lambda _: None)
    return digest(tmp / "run" / "state.pt")


wanted = sys.argv[1:] or [*TINY_CASES, "six-stage last stage"]
for case in wanted:
    with tempfile.TemporaryDirectory() as tmp:
        d = flat_stage(Path(tmp)) if case == "six-stage last stage" else run_tiny(Path(tmp), **TINY_CASES[case])
    print(f"{case}: {d}", flush=True)
