"""The term objects and recipes train, bit for bit, what the loop they replaced (commit 72835c1) trained."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from eqlm.recipe import Recipe, load_recipe  # noqa: E402
from eqlm.trainer import train_stage  # noqa: E402

from .tiny_training import ROOT, TEXT, TINY_TERMS, digest  # noqa: E402

# Digests of the model after a few steps, recorded with the loop as it was before the terms were objects (commit
# 72835c1, eqlm/training.py's TrainSettings and equilibrium_loss), on one thread. The term objects must reproduce it
# bit for bit, RNG draws included. torch's CPU kernels round differently on different CPUs, so each case holds one
# record per machine kind it was recorded on, each made by running 72835c1's own loop there (never typed by hand);
# a run must equal the old loop's digest on one of them: (first machine, AMD EPYC with AVX-512, Intel Xeon with
# AVX-512 FP16). eqlm/tests/old_loop_digests.py runs the old loop on a new kind.
BEFORE_THE_TERM_OBJECTS = {
    "tiny": ({}, {}, ("112517d28f644a7a", "5be5c3026f6bc879", "033112740f4c5aae")),
    "full gradient with the slow-mode term": (
        {"grad_iters": 0, "start": {"noise": 0.0}},
        {"slow_mode": {"weight": 0.5}},
        ("0aa69bf33f3330d4", "0ad2267f0b70e021", "390b455603f2fbe7"),
    ),
    "warm starts and the settled warm term": (
        {"start": {"noise": 0.5, "warm": 0.5}},
        {"settled_warm": {"weight": 0.5}},
        ("8ca872596314be8c", "682d4b70c4f92beb", "af93f329f9c4c764"),
    ),
    "early gain, implicit gradient, self-distillation": (
        {"implicit_iters": 4},
        {"early_gain": {"weight": 0.5}, "distill": {"weight": 0.5, "depth": 2}},
        ("d25de4f16d490ec9", "c8d9aad71bf8a5e1", "2562925e231c9ab1"),
    ),
}
UNROLLED_BEFORE = ("65c7cf8f9424d320", "130e2ed6308c204c", "3f7bf7cf348b2057")
ANYTIME_LAST_STAGE_BEFORE = ("5ef5ec0d82a7a845", "3561018767f20ef7", "0210e9b75e04efba")


def trained_digest(tmp_path, schedule: dict, solve: dict, terms: dict) -> str:
    """The digest of a tiny model after 6 steps of batch 2 x 32 on the test text, as the old loop's runs were."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(TEXT * 4)
    raw = {
        "model": {"d_model": 32, "n_heads": 4, "d_mlp": 64, "max_positions": 32},
        "corpus": {"file": str(corpus)},
        "stages": {
            "s": {"steps": 6, "batch_size": 2, "seq_len": 32, "schedule": schedule, "solve": solve, "terms": terms}
        },
    }
    stage = Recipe("tiny", Path("tiny.toml"), raw).resolve()
    train_stage(stage, tmp_path / "run", log=lambda _: None, checkpoint_steps=1, eval_bytes=512)
    return digest(tmp_path / "run" / "state.pt")


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(BEFORE_THE_TERM_OBJECTS))
def test_the_term_objects_reproduce_the_loop_they_replaced_bit_for_bit(tmp_path, case):
    solve, terms, expected = BEFORE_THE_TERM_OBJECTS[case]
    schedule = {"lr": 3e-3, "warmup_steps": 2, "penalty_warmup_steps": 300}
    solve = {"depth": {"min": 3, "max": 6}, "grad_iters": 2, "start": {"noise": 0.5}} | solve
    assert trained_digest(tmp_path, schedule, solve, TINY_TERMS | terms) in expected


@pytest.mark.slow
def test_the_unrolled_recipe_reproduces_the_loop_it_replaced_bit_for_bit(tmp_path):
    schedule = {"lr": 3e-3, "warmup_steps": 2, "penalty_warmup_steps": 0}
    terms = {"anytime_ce": {"weight": 1.0, "depths": [4, 8, 12]}, "residual": {"weight": 0.1}}
    assert trained_digest(tmp_path, schedule, {"kind": "unrolled"}, terms) in UNROLLED_BEFORE


@pytest.mark.slow  # the KJV corpus and three steps of the six-stage model's last stage
def test_the_six_stage_models_last_stage_reproduces_the_loop_it_replaced_bit_for_bit(tmp_path):
    stage = load_recipe("eqlm-demo-anytime").resolve("flat")
    stage.data["from"] = None  # start from the model itself: any start shows the step is the same
    served = ROOT / "models" / "eqlm-demo-anytime" / "checkpoint.pt"
    train_stage(stage, tmp_path / "run", init_checkpoint=served, stop_after=3, log=lambda _: None)
    assert digest(tmp_path / "run" / "state.pt") in ANYTIME_LAST_STAGE_BEFORE
