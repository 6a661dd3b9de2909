"""BLiMP minimal-pair scoring: a pair is correct only when log P(good) > log P(bad) strictly; ties are reported.

Reading pairs and summarising are plain Python; `sentence_logprobs` needs torch and runs on workers/commands.
Each sentence is scored as bytes after one beginning-of-text byte (a newline, the start of a verse in the demo
corpus), at several solver depths in one anytime pass.

This is also what lm-evaluation-harness scores through /v1 for a BLiMP task with `doc_to_text: ""` and
`target_delimiter: ""`: its request for an empty context is its prefix token (/tokenizer_info's `bos_token`,
this BOS) followed by the sentence's bytes, so its decisions equal these (inference/tests/test_lmeval.py).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

BOS = b"\n"


@dataclass(frozen=True)
class Pair:
    paradigm: str
    pair_id: str
    good: str
    bad: str


def list_paradigms(blimp_dir: Path) -> list[str]:
    return sorted(p.stem for p in Path(blimp_dir).glob("*.jsonl"))


def load_pairs(blimp_dir: Path, paradigms: list[str] | None = None, limit: int | None = None) -> list[Pair]:
    """Pairs of the chosen paradigms (all when None), the first `limit` of each, in file order."""
    blimp_dir = Path(blimp_dir)
    available = list_paradigms(blimp_dir)
    if not available:
        raise ValueError(f"no BLiMP .jsonl files in {blimp_dir}")
    chosen = paradigms or available
    unknown = sorted(set(chosen) - set(available))
    if unknown:
        raise ValueError(f"unknown paradigms: {', '.join(unknown)}")
    pairs = []
    for name in chosen:
        with open(blimp_dir / f"{name}.jsonl", encoding="utf-8") as fh:
            count = 0
            for line_no, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                if limit is not None and count >= limit:
                    break
                row = json.loads(line)
                pairs.append(Pair(name, str(row.get("pairID", line_no)), row["sentence_good"], row["sentence_bad"]))
                count += 1
    return pairs


def compare(good: float, bad: float) -> str:
    """'correct' only for a strict win; equal scores are a 'tie', never credit."""
    if good > bad:
        return "correct"
    if good == bad:
        return "tie"
    return "wrong"


def standard_error(p: float, n: int) -> float:
    return math.sqrt(p * (1 - p) / n) if n else float("nan")


def summarize(pairs: list[Pair], good: list[float], bad: list[float]) -> dict:
    """Per-paradigm accuracy, ties and standard error; overall = unweighted mean over paradigms."""
    per: dict[str, dict] = {}
    for pair, g, b in zip(pairs, good, bad, strict=True):
        row = per.setdefault(pair.paradigm, {"n": 0, "correct": 0, "ties": 0})
        row["n"] += 1
        outcome = compare(g, b)
        row["correct"] += outcome == "correct"
        row["ties"] += outcome == "tie"
    for row in per.values():
        row["accuracy"] = row["correct"] / row["n"]
        row["se"] = standard_error(row["accuracy"], row["n"])
    k = len(per)
    overall = {
        "paradigms": k,
        "n": sum(r["n"] for r in per.values()),
        "correct": sum(r["correct"] for r in per.values()),
        "ties": sum(r["ties"] for r in per.values()),
        "accuracy": sum(r["accuracy"] for r in per.values()) / k if k else float("nan"),
        # SE of an unweighted mean of independent paradigm accuracies
        "se": math.sqrt(sum(r["se"] ** 2 for r in per.values())) / k if k else float("nan"),
    }
    return {"overall": overall, "paradigms": dict(sorted(per.items()))}


def sentence_logprobs(
    model,
    sentences: list[str],
    depths: list[int],
    device: str = "cpu",
    batch_size: int = 32,
    progress: Callable[[int], None] | None = None,
    tol: float | None = None,
) -> dict[int, list[float]]:
    """Total log-probability (nats) of each sentence's bytes after BOS, at each depth (torch; workers only).

    With `tol`, each position halts when its relative residual falls below it, capped at the one depth given (adaptive
    depth). An explicit transformer has one depth, its layer count."""
    import torch
    import torch.nn.functional as F

    max_len = model.config.max_positions
    encoded = [list((BOS + s.encode("utf-8"))[:max_len]) for s in sentences]
    out: dict[int, list[float]] = {d: [] for d in depths}
    for start in range(0, len(encoded), batch_size):
        chunk = encoded[start : start + batch_size]
        width = max(len(c) for c in chunk)
        ids = torch.zeros(len(chunk), width, dtype=torch.long)
        mask = torch.zeros(len(chunk), width - 1, dtype=torch.bool)
        for i, c in enumerate(chunk):
            ids[i, : len(c)] = torch.tensor(c)
            mask[i, : len(c) - 1] = True  # right padding never reaches real positions (causal)
        ids = ids.to(device)
        with torch.no_grad():
            logits = _logits_at(model, ids[:, :-1], depths, tol)
            for d in depths:
                logp = F.log_softmax(logits[d].double(), dim=-1)
                picked = logp.gather(-1, ids[:, 1:, None])[..., 0]
                totals = (picked * mask.to(device)).sum(-1)
                out[d].extend(totals.cpu().tolist())
        if progress:
            progress(min(start + batch_size, len(encoded)))
    return out


def _logits_at(model, ids, depths: list[int], tol: float | None) -> dict:
    if model.model_class == "ExplicitLM":
        if depths != [len(model.layers)] or tol is not None:
            raise ValueError(f"an explicit transformer is scored at its layer count ({len(model.layers)}) only")
        return {depths[0]: model(ids)}
    if tol is not None and len(depths) != 1:
        raise ValueError("adaptive depth is scored at one cap")
    return model.solve(ids, max_iter=max(depths), depths=depths, tol=tol).logits


def evaluate(
    model,
    pairs: list[Pair],
    depths: list[int],
    device: str = "cpu",
    progress: Callable[[float, str], None] | None = None,
) -> dict:
    """{depth: summary} for the pairs, scoring good and bad sentences in one stream."""
    sentences = [p.good for p in pairs] + [p.bad for p in pairs]
    total = len(sentences)

    def tick(done: int) -> None:
        if progress:
            progress(done / total, f"scored {done}/{total} sentences")

    scores = sentence_logprobs(model, sentences, depths, device, progress=tick)
    n = len(pairs)
    return {d: summarize(pairs, scores[d][:n], scores[d][n:]) for d in depths}
