"""The evaluation of a trained run: what the experiment declared, measured on its checkpoint, written as result rows
once (unique constraints), then the run ends. Torch is imported inside the functions: the web process never loads it.
"""

from __future__ import annotations

import logging
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from portal.models import JobStatus

from .models import TrainingRun
from .runs import Heartbeat, arm_of, release, stage_chain

log = logging.getLogger(__name__)
Phase = TrainingRun.Phase
SLICE = Path(settings.BASE_DIR) / "inference" / "demo" / "heldout_slice.txt"


def evaluation_bytes(evaluation: dict, stage) -> tuple[bytes, str]:
    """The text the evaluation reads: the committed KJV slice, or the held-out slice of the corpus trained on (the
    committed slice when the KJV corpus cannot be dumped on this machine, as the model evaluations do)."""
    if evaluation["text"] == "slice":
        return SLICE.read_bytes(), "committed held-out slice"
    from eqlm.corpus import split
    from eqlm.trainer import HELDOUT_FRACTION, load_training_corpus

    try:
        data, _, name = load_training_corpus(stage)
    except (RuntimeError, OSError) as exc:
        if stage.corpus_file is not None or stage.data["corpus"]["name"] != "kjv":
            raise
        log.warning("corpus unavailable (%s); evaluating on the committed slice", exc)
        return SLICE.read_bytes(), "committed held-out slice (the KJV corpus was unavailable)"
    return split(data, HELDOUT_FRACTION)[1], f"held-out slice of the {name}"


def evaluation_records(run: TrainingRun, evaluation: dict, figures, halting: list, provenance: dict, model) -> list:
    """Long-format records of what the evaluation measured (eqlm.path_independence's PathIndependence, or an
    explicit model's one depth in the same shape)."""
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
    for start, found in figures.starts.items():
        if "heldout_bits_per_byte" in metrics:
            for depth, value in found.bits_per_byte.items():
                condition = {"depth": depth, "start": start, "seed": seed}
                records.append(
                    {**base, "metric": "heldout_bits_per_byte", "value": value, "unit": "bits/byte"}
                    | {"condition": condition}
                )
        for metric, value, unit in (
            ("aa_cosine", found.aa_cosine, "cosine"),
            ("greedy_agreement", found.greedy_agreement, "fraction"),
        ):
            if metric in metrics and value is not None:  # against the zero start, at the deepest depth
                condition = {"depth": deepest, "start": start, "seed": seed}
                records.append({**base, "metric": metric, "value": value, "unit": unit, "condition": condition})
    for point in halting:
        condition = {"budget": point.cap, "tol": point.tol, "start": "zero", "seed": seed}
        records.append(
            {**base, "metric": "heldout_bits_per_byte", "value": point.bits_per_byte, "unit": "bits/byte"}
            | {"condition": condition, "n": point.positions}
        )
        if "mean_iterations" in metrics:
            records.append(
                {**base, "metric": "mean_iterations", "value": point.mean_iterations, "unit": "iterations"}
                | {"condition": condition, "n": point.positions}
            )
    return records


def evaluate_run(run: TrainingRun, token: str) -> None:
    """Measure the trained checkpoint as the experiment declared and write its rows (once), then end the run."""
    from benchmarks_app.models import ResultRow
    from benchmarks_app.records import ingest_records
    from eqlm.checkpoint import load_checkpoint
    from eqlm.convergence import TorchBackend, adaptive_point, windows_of
    from eqlm.explicit_bpb import explicit_bits_per_byte
    from eqlm.path_independence import PathIndependence, StartFigures, path_independence

    evaluation = run.experiment.evaluation
    model, data = load_checkpoint(run.checkpoint)
    provenance = data["provenance"]
    text, source = evaluation_bytes(evaluation, stage_chain(arm_of(run), run.seed)[-1])
    windows = windows_of(text, evaluation["window"], evaluation["windows"])
    heartbeat = Heartbeat(run, token, 1)

    def progress(fraction: float) -> None:
        heartbeat({"step": run.step, "planned_steps": run.planned_steps, "eta_seconds": None})
        TrainingRun.objects.filter(pk=run.pk).update(
            progress=0.9 + 0.1 * fraction, progress_message=f"evaluating on the {source}: {fraction:.0%}"
        )

    heartbeat({"step": run.step, "planned_steps": run.planned_steps, "eta_seconds": None})
    if model.model_class == "ExplicitLM":  # one depth, its layer count; no start, no halting
        value, positions = explicit_bits_per_byte(model, windows)
        depth = len(model.layers)
        figures = PathIndependence([depth], positions, {"zero": StartFigures("zero", {depth: value})})
        halting = []
    else:  # the measurement bench/depth_curve.py makes, on CPU (it draws its noise from a CPU generator)
        figures = path_independence(
            model.cpu(), windows, evaluation["depths"], evaluation["starts"], seed=evaluation["noise_seed"]
        )
        progress(0.8)
        halting = [
            adaptive_point(TorchBackend(model, "cpu"), windows, evaluation["tol"], cap=budget)
            for budget in evaluation["budgets"]
        ]
    records = evaluation_records(run, evaluation, figures, halting, provenance, model)
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
