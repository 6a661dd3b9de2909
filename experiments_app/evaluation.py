"""The evaluation of a trained run: what the experiment declared, measured on its checkpoint, written as result rows
once (unique constraints), then the run ends. Torch is imported inside the functions: the web process never loads it.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from eqlm.evaluate import COMMITTED, heldout_text, record
from portal.models import JobStatus

from .models import TrainingRun
from .runs import Heartbeat, arm_of, release, run_folder, stage_chain

Phase = TrainingRun.Phase


def evaluation_bytes(evaluation: dict, stage) -> tuple[bytes, str]:
    """The text the evaluation reads: the committed KJV slice, or the held-out slice of the corpus trained on (the
    committed slice when the KJV corpus cannot be dumped on this machine, as the model evaluations do)."""

    def load() -> tuple[bytes, str]:
        from eqlm.trainer import load_training_corpus

        data, _, name = load_training_corpus(stage)
        return data, f"held-out slice of the {name}"

    kjv = stage.corpus_file is None and stage.data["corpus"]["name"] == "kjv"
    return heldout_text(evaluation["text"], load, f"{COMMITTED} (the KJV corpus was unavailable)" if kjv else None)


def evaluation_records(
    run: TrainingRun, evaluation: dict, figures, halting: list, provenance: dict, model, blimp: dict | None = None
) -> list:
    """Long-format records of what the evaluation measured (eqlm.path_independence's PathIndependence, or an
    explicit model's one depth in the same shape); `blimp` holds BLiMP's overall summaries by depth and, under
    ("budget", cap), under halting."""
    from eqlm.flops import flops_per_token

    blimp = blimp or {}
    config = model.config.to_dict()
    slug, seed = run.experiment.slug, run.seed
    base = {
        "run": f"experiment:{slug}:{run.arm_label}:seed{seed}",
        "experiment": slug,
        "arm": run.arm_label,
        "seed": seed,
        "model_family": model.model_class,
        "num_params": model.num_params(),
        "model_name": f"{slug} {run.arm_label} seed {seed}",
        "config_hash": run.recipe_hash,
        "git_commit": str(provenance.get("git_commit", ""))[:64],
        "recipe": {
            "arm_hash": run.arm_hash,
            "recipe_hash": run.recipe_hash,
            "corpus_sha256": provenance.get("corpus_sha256", ""),
            "seed": seed,
        },
        "n": figures.positions,
    }
    metrics, deepest = evaluation["metrics"], figures.depths[-1]
    records = []

    def blimp_record(summary: dict, condition: dict) -> dict:
        return record(base, "blimp_accuracy", summary["accuracy"], condition, n=summary["n"])  # n: the pairs scored

    def flops_record(iterations: float, condition: dict) -> dict:
        return record(base, "flops_per_token", flops_per_token(model.model_class, config, iterations), condition)

    for depth in figures.depths:
        condition = {"depth": depth, "start": "zero", "seed": seed}
        if "flops_per_token" in metrics:
            records.append(flops_record(depth, condition))
        if "blimp_accuracy" in metrics and depth in blimp:
            records.append(blimp_record(blimp[depth], condition))
    for start, found in figures.starts.items():
        if "heldout_bits_per_byte" in metrics:
            for depth, value in found.bits_per_byte.items():
                records.append(
                    record(base, "heldout_bits_per_byte", value, {"depth": depth, "start": start, "seed": seed})
                )
        for metric, value in (("aa_cosine", found.aa_cosine), ("greedy_agreement", found.greedy_agreement)):
            if metric in metrics and value is not None:  # against the zero start, at the deepest depth
                records.append(record(base, metric, value, {"depth": deepest, "start": start, "seed": seed}))
    for point in halting:
        condition = {"budget": point.cap, "tol": point.tol, "start": "zero", "seed": seed}
        if "halting_mean" in evaluation:
            condition["halting_mean"] = evaluation["halting_mean"]
        if "flops_per_token" in metrics:
            records.append(flops_record(point.mean_iterations, condition))
        if "blimp_accuracy" in metrics and ("budget", point.cap) in blimp:
            records.append(blimp_record(blimp["budget", point.cap], condition))
        records.append(record(base, "heldout_bits_per_byte", point.bits_per_byte, condition, n=point.positions))
        if "mean_iterations" in metrics:
            records.append(record(base, "mean_iterations", point.mean_iterations, condition, n=point.positions))
    return records


PARTS_FILE = "evaluation-parts.pt"


def _parts_key(run: TrainingRun, provenance: dict, windows: int) -> str:
    """What saved parts must share with this evaluation: the registration, the checkpoint and the windows."""
    return f"{run.experiment.registration_hash}:{provenance.get('run_hash')}:{provenance.get('steps')}:{windows}"


def _load_parts(path: Path, key: str) -> dict:
    import torch

    fresh = {"key": key, "tol": None, "generator": None, "figures": [], "halting": []}
    fresh |= {"blimp": {}}  # BLiMP's scores so far, by key ("depth:d", "budget:cap"), in sentence order
    if path.exists():
        saved = torch.load(path, map_location="cpu", weights_only=True)
        if saved.get("key") == key:
            return fresh | saved
    return fresh


class SliceClock:
    """Whether another part of an evaluation fits in this slice. At least one part runs per slice (so every slice
    moves on); after that, a part runs only when this slice's time so far plus the longest part of its kind measured
    in this slice (of any kind, before the first of its kind) ends within `seconds`."""

    def __init__(self, seconds: float):
        self.began = time.monotonic()
        self.seconds = seconds
        self.longest: dict[str, float] = {}

    def room(self, kind: str) -> bool:
        if not self.longest:
            return True
        guess = self.longest.get(kind, max(self.longest.values()))
        return time.monotonic() - self.began + guess <= self.seconds

    @contextmanager
    def part(self, kind: str):
        began = time.monotonic()
        yield
        self.longest[kind] = max(self.longest.get(kind, 0.0), time.monotonic() - began)


def _timed_parts(clock: SliceClock, kind: str, total: int, done: int, size: int, measure) -> bool:
    """Measure items `done`..`total`, `size` at a time, each a timed part of `kind` (`measure(start, stop)` measures
    one and saves it). False when this slice has no room for the next part, True when every item is measured."""
    while done < total:
        if not clock.room(kind):
            return False
        stop = min(total, done + size)
        with clock.part(kind):
            measure(done, stop)
        done = stop
    return True


def _measured_in_parts(model, evaluation, stage, windows, parts_path, key, progress, clock: SliceClock):
    """What the evaluation measures on an EqLM, in timed parts (`clock`) that resume from `parts_path` (saved after
    each part): the path-independence and halting figures over `windows`, a part of whole batches at a time, then,
    when declared, BLiMP's sentences, BLIMP_PART_SENTENCES at a time. Returns (figures, halting points, BLiMP
    summaries), or None when this slice has no room for the next part."""
    import dataclasses

    import torch

    from eqlm.convergence import AdaptivePoint, TorchBackend, merge_points
    from eqlm.evaluate import halting_points, start_figures
    from eqlm.path_independence import BATCH, from_dict, merge, to_dict
    from eqlm.provenance import atomic_torch_save

    parts = _load_parts(parts_path, key)
    if parts["tol"] is None:
        tol = evaluation["tol"]
        if "halting_mean" in evaluation and evaluation["budgets"]:
            tuning = tuning_windows(evaluation, stage, windows)
            tol = tuned_tol(TorchBackend(model, "cpu"), tuning, evaluation["halting_mean"], evaluation["budgets"][0])
        parts["tol"] = tol
    wants_blimp = "blimp_accuracy" in evaluation["metrics"]
    share = 0.7 if wants_blimp else 1.0  # of the progress bar, the windows' part
    size = -(-max(1, settings.EXPERIMENT_EVAL_PART_WINDOWS) // BATCH) * BATCH  # whole batches

    def windows_part(start: int, stop: int) -> None:
        chunk = windows[start:stop]
        gen = torch.Generator().manual_seed(evaluation["noise_seed"])
        if parts["generator"] is not None:
            gen.set_state(parts["generator"])
        figures = start_figures(
            model,
            chunk,
            evaluation["depths"],
            evaluation["starts"],
            gen=gen,
            progress=lambda n: progress(share * (start + n) / len(windows)),
        )
        points = halting_points(model, chunk, parts["tol"], evaluation["budgets"])
        parts["figures"].append(to_dict(figures))
        parts["halting"].append([dataclasses.asdict(p) for p in points])
        parts["generator"] = gen.get_state()
        atomic_torch_save(parts, parts_path)

    measured = sum(f["positions"] for f in parts["figures"]) // (windows.shape[1] - 1)  # each window's first byte
    if not _timed_parts(clock, "windows", len(windows), measured, size, windows_part):
        return None
    figures = merge([from_dict(f) for f in parts["figures"]])
    halting = [
        merge_points([AdaptivePoint(**part[i]) for part in parts["halting"]]) for i in range(len(evaluation["budgets"]))
    ]
    blimp = {}
    if wants_blimp:
        pairs, sentences = blimp_sentences(evaluation["blimp_pairs"])

        def blimp_part(start: int, stop: int) -> None:
            scores = blimp_scores(model, sentences[start:stop], figures.depths, evaluation["budgets"], parts["tol"])
            for name, values in scores.items():
                parts["blimp"].setdefault(name, []).extend(values)
            atomic_torch_save(parts, parts_path)
            progress(share + (1 - share) * stop / len(sentences))

        scored = len(next(iter(parts["blimp"].values()), []))
        if not _timed_parts(clock, "blimp", len(sentences), scored, BLIMP_PART_SENTENCES, blimp_part):
            return None
        blimp = blimp_summaries(pairs, parts["blimp"])
    return figures, halting, blimp


def evaluate_run(run: TrainingRun, token: str, seconds: float | None = None) -> bool:
    """Measure the trained checkpoint as the experiment declared and write its rows (once), then end the run.

    An EqLM's figures are measured in timed parts (EXPERIMENT_EVAL_PART_WINDOWS windows each, then BLiMP's sentences,
    BLIMP_PART_SENTENCES each), saved in the run's folder as each part ends, so a long evaluation (the whole held-out
    slice, BLiMP) spans slices: False when this slice's `seconds` ran out with parts left (the caller sends the next
    slice), True when the rows are written.
    """
    from eqlm.checkpoint import load_checkpoint
    from eqlm.evaluate import explicit_figures, windows_of
    from results.models import ResultRow
    from results.records import ingest_records

    clock = SliceClock(settings.EXPERIMENT_SLICE_SECONDS if seconds is None else seconds)
    evaluation = run.experiment.evaluation
    model, data = load_checkpoint(run.checkpoint)
    provenance = data["provenance"]
    stage = stage_chain(arm_of(run), run.seed)[-1]
    text, source = evaluation_bytes(evaluation, stage)
    windows = windows_of(text, evaluation["window"], evaluation["windows"])
    heartbeat = Heartbeat(run, token, 1)

    def progress(fraction: float) -> None:
        heartbeat({"step": run.step, "planned_steps": run.planned_steps, "eta_seconds": None})
        TrainingRun.objects.filter(pk=run.pk).update(
            progress=0.9 + 0.1 * fraction, progress_message=f"evaluating on the {source}: {fraction:.0%}"
        )

    heartbeat({"step": run.step, "planned_steps": run.planned_steps, "eta_seconds": None})
    parts_path = run_folder(run) / PARTS_FILE
    if model.model_class == "ExplicitLM":  # one depth, its layer count; no start, no halting; fast: no parts
        figures, halting, blimp = explicit_figures(model, windows), [], {}
        if "blimp_accuracy" in evaluation["metrics"]:
            pairs, sentences = blimp_sentences(evaluation["blimp_pairs"])
            blimp = blimp_summaries(pairs, blimp_scores(model, sentences, figures.depths, [], None))
    else:  # the measurement bench/depth_curve.py makes, on CPU (it draws its noise from a CPU generator)
        key = _parts_key(run, provenance, len(windows))
        measured = _measured_in_parts(model.cpu(), evaluation, stage, windows, parts_path, key, progress, clock)
        if measured is None:
            return False
        figures, halting, blimp = measured
    records = evaluation_records(run, evaluation, figures, halting, provenance, model, blimp)
    if records:
        ingest_records(records, source_name=f"experiment:{run.experiment.slug}:{run.arm_label}:seed{run.seed}")
    written = ResultRow.objects.filter(experiment=run.experiment.slug, arm_label=run.arm_label, seed=run.seed).count()
    kept = {
        k: provenance.get(k)
        for k in (
            "run_hash",
            "config_hash",
            "git_commit",
            "corpus",
            "corpus_sha256",
            "steps",
            "tokens",
            "train_seconds",
        )
    }
    release(
        run.pk,
        token,
        status=JobStatus.DONE,
        phase=Phase.FINISHED,
        progress=1.0,
        finished_at=timezone.now(),
        progress_message=f"done: {written} result rows",
        rows_written=written,
        eta_seconds=0,
        provenance={**kept, "recipe_hash": run.recipe_hash, "evaluated_on": source},
    )
    parts_path.unlink(missing_ok=True)  # the rows hold what the parts measured
    return True


# --- the head-to-head's measures: a halting rule tuned to a mean depth, BLiMP ----------------------------------------

TUNING_WINDOWS = 16


def tuning_windows(evaluation: dict, stage, windows):
    """Windows to tune a halting rule on: the first of the training side of the corpus (never the held-out text the
    rows report), or the evaluation's own windows when the evaluation reads the committed slice."""
    if evaluation["text"] == "slice":
        return windows[:TUNING_WINDOWS]
    from eqlm.corpus import split
    from eqlm.evaluate import windows_of
    from eqlm.trainer import load_training_corpus

    data, _, _ = load_training_corpus(stage)
    return windows_of(split(data)[0], evaluation["window"], TUNING_WINDOWS)


def tuned_tol(backend, windows, target: float, cap: int, steps: int = 16) -> float:
    """The residual rule's tol whose mean iterations (cap `cap`) come within 0.25 of `target`: bisection on log tol
    over [1e-5, 0.5] (the mean falls as tol grows). Returns the closest tol met, rounded to 3 significant digits."""
    import math

    from eqlm.convergence import adaptive_point

    low, high = math.log(1e-5), math.log(0.5)
    best = (math.inf, 0.01)
    for _ in range(steps):
        tol = float(f"{math.exp((low + high) / 2):.3g}")
        mean = adaptive_point(backend, windows, tol, cap=cap).mean_iterations
        best = min(best, (abs(mean - target), tol))
        if abs(mean - target) <= 0.25:
            break
        if mean > target:
            low = math.log(tol)
        else:
            high = math.log(tol)
    return best[1]


BLIMP_PART_SENTENCES = 256  # BLiMP's sentences scored per part of an evaluation (whole batches of 32)


def blimp_sentences(pairs_per_paradigm: int) -> tuple[list, list[str]]:
    """BLiMP's pairs (the first `pairs_per_paradigm` of each paradigm in BLIMP_DIR) and the sentences scored: every
    good sentence, then every bad one."""
    from eqlm.blimp import load_pairs

    pairs = load_pairs(Path(settings.BLIMP_DIR), None, pairs_per_paradigm)
    return pairs, [p.good for p in pairs] + [p.bad for p in pairs]


def blimp_scores(model, sentences: list[str], depths: list[int], budgets: list[int], tol: float | None) -> dict:
    """Each sentence's log-probability (eqlm.blimp) at each depth ("depth:d"; an explicit model: its layer count)
    and, with each cap ("budget:cap"), under the residual halting rule at tol. Scored in batches of 32 from the
    first sentence, so parts that start on a whole batch score what one pass scores."""
    from eqlm.blimp import sentence_logprobs

    scores = {f"depth:{d}": v for d, v in sentence_logprobs(model, sentences, depths).items()}
    for cap in budgets:
        scores[f"budget:{cap}"] = sentence_logprobs(model, sentences, [cap], tol=tol)[cap]
    return scores


def blimp_summaries(pairs: list, scores: dict) -> dict:
    """BLiMP's overall summary (eqlm.blimp) from `blimp_scores` of every sentence, keyed by depth or ("budget", cap)
    as evaluation_records reads them."""
    from eqlm.blimp import summarize

    n, out = len(pairs), {}
    for name, values in scores.items():
        kind, number = name.split(":")
        key = int(number) if kind == "depth" else ("budget", int(number))
        out[key] = summarize(pairs, values[:n], values[n:])["overall"]
    return out
