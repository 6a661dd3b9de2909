"""Run a BLiMP EvaluationRun (worker side: imports torch inside) and store its rows through the benchmarks app."""

from __future__ import annotations

import logging
from pathlib import Path

from django.conf import settings

from eqlm.blimp import evaluate, load_pairs

from .models import EvaluationRun

log = logging.getLogger(__name__)
MODEL_FAMILY = "tied-anytime"


def pick_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def subset_label(run: EvaluationRun) -> str:
    paradigms = "all" if not run.paradigms else f"{len(run.paradigms)}p-" + "+".join(sorted(run.paradigms))[:60]
    limit = f"-first{run.pair_limit}" if run.pair_limit else ""
    return f"{paradigms}{limit}"


def result_records(run: EvaluationRun, results: dict) -> list[dict]:
    """Long-format rows (experiment "local", metric blimp_accuracy, condition {"depth": d}) for ingest_records."""
    model = run.model
    provenance = model.provenance or {}
    records = []
    for depth, summary in sorted(results.items(), key=lambda kv: int(kv[0])):
        overall = summary["overall"]
        records.append(
            {
                "run": f"local:{model.slug}:{model.sha256[:12]}:blimp-{subset_label(run)}",
                "experiment": "local",
                "arm": model.slug,
                "seed": provenance.get("seed") if isinstance(provenance.get("seed"), int) else None,
                "metric": "blimp_accuracy",
                "value": overall["accuracy"],
                "unit": "fraction",
                "n": overall["n"],
                "step": None,
                "condition": {"depth": int(depth)},
                "model_family": MODEL_FAMILY if model.model_class == "EqLM" else "explicit",
                "model_name": model.name,
                "num_params": model.num_params,
                "config_hash": str(provenance.get("config_hash", ""))[:128],
                "git_commit": str(provenance.get("git_commit", ""))[:64],
            }
        )
    return records


def run_evaluation(run_id: int) -> EvaluationRun:
    """Score the run's pairs at its depths, store per-paradigm results on the row and overall rows as results."""
    import torch

    from benchmarks_app.services import ingest_records
    from eqlm.checkpoint import load_checkpoint

    run = EvaluationRun.objects.select_related("model").get(pk=run_id)
    if run.is_finished:
        return run  # idempotent: a redelivered message does nothing
    run.mark_running()
    device = pick_device()
    EvaluationRun.objects.filter(pk=run.pk).update(device=device)
    model, _ = load_checkpoint(run.model.file_path())
    if not hasattr(model, "solve"):
        raise ValueError("only EqLM checkpoints have anytime depths to evaluate")
    model.to(device)
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    pairs = load_pairs(Path(run.blimp_dir or settings.BLIMP_DIR), run.paradigms or None, run.pair_limit)
    run.report_progress(0.0, f"{len(pairs)} pairs at depths {run.depths} on {device}")
    results = evaluate(model, pairs, run.depths, device, progress=lambda f, m: run.report_progress(0.95 * f, m))
    stored = {str(d): r for d, r in results.items()}
    records = result_records(run, stored)
    created = ingest_records(records, source_name=f"inference:blimp:{run.model.slug}:{subset_label(run)}")
    EvaluationRun.objects.filter(pk=run.pk).update(results=stored, rows_written=created)
    run.refresh_from_db()
    run.mark_done()
    return run
