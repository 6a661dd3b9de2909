"""The programme's BLiMP protocol: the first 200 pairs of five paradigms, each sentence scored alone as the sum of
log p(token i | tokens before it) for i >= 1 (no BOS) at the model's own solver settings; a pair counts when
good > bad strictly. As in the programme, a pair with a sentence of fewer than two tokens is skipped, not counted.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from eqlm.blimp import load_pairs

PARADIGMS = (
    "adjunct_island",
    "anaphor_gender_agreement",
    "anaphor_number_agreement",
    "animate_subject_passive",
    "animate_subject_trans",
)
PAIRS_PER_PARADIGM = 200


def pick_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def use_cpu_threads() -> int:
    """Set torch's CPU threads for a protocol run as the workers run it (two, or one on a one-core machine); returns
    the count. The joint Anderson solve's scores move with the thread count (the programme's own, by up to 0.04 nats
    a sentence), so the workers' figure and the tests' come from the same setting. Counted from the cores this
    process may use, not from torch's current setting, which an earlier job in the process may have changed."""
    import os

    import torch

    threads = max(1, min(2, len(os.sched_getaffinity(0))))
    torch.set_num_threads(threads)
    return threads


def run_programme_protocol(
    model,
    encode: Callable[[str], list[int]],
    blimp_dir: Path,
    limit: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    device: str | None = None,
    paradigms: list[str] | None = None,
    per_paradigm: int | None = PAIRS_PER_PARADIGM,
) -> dict:
    """{num_correct, num_total, accuracy, skipped, device, pairs: [{paradigm, pair_id, good, bad, good_logprob,
    bad_logprob, correct}]} for the protocol's 1,000 pairs (the first `limit` of them when given), in file order.

    `encode` is GPT-2's BPE (text -> ids). The model moves to `device` (cuda when available, else cpu);
    `progress(done, total)` is called after each pair. `paradigms` and `per_paradigm` choose other pairs (every
    paradigm in blimp_dir when paradigms is None and per_paradigm is None: the full BLiMP) scored the same way."""
    from .score import sentence_logprob
    from .solvers import CONFIG_SOLVER

    solver = CONFIG_SOLVER[model.config.solver]  # the model's own settings, as the programme scores

    chosen = list(PARADIGMS) if paradigms is None and per_paradigm == PAIRS_PER_PARADIGM else paradigms
    pairs = load_pairs(Path(blimp_dir), chosen, limit=per_paradigm)
    if limit is not None:
        pairs = pairs[:limit]
    device = device or pick_device()
    model.to(device)
    rows, skipped = [], 0
    for done, pair in enumerate(pairs, 1):
        good_ids, bad_ids = encode(pair.good), encode(pair.bad)
        if len(good_ids) < 2 or len(bad_ids) < 2:
            skipped += 1
        else:
            good, bad = sentence_logprob(model, good_ids, solver), sentence_logprob(model, bad_ids, solver)
            rows.append(
                {
                    "paradigm": pair.paradigm,
                    "pair_id": pair.pair_id,
                    "good": pair.good,
                    "bad": pair.bad,
                    "good_logprob": good,
                    "bad_logprob": bad,
                    "correct": good > bad,
                }
            )
        if progress:
            progress(done, len(pairs))
    correct = sum(row["correct"] for row in rows)
    return {
        "num_correct": correct,
        "num_total": len(rows),
        "accuracy": correct / len(rows) if rows else 0.0,
        "skipped": skipped,
        "device": device,
        "pairs": rows,
    }
