"""Services of the model registry: registering models (uploaded checkpoints validated out of process, the demo
model), queueing BLiMP evaluations, and running one (worker side).

Nothing here imports torch at module level: checkpoint validation runs `eqlm.checkpoint_probe` in a child
process, and `run_evaluation` imports torch inside, on the gpu worker.
"""

from __future__ import annotations

import logging
from pathlib import Path

from django.conf import settings
from django.db import transaction

from eqlm.blimp import evaluate, load_pairs
from eqlm.limits import DEFAULT_MODEL_ID, DEPTH_MAX, DEPTH_MIN

from .imports import PROGRAMME_FORMAT, RegistryError, queue_import, register_checkpoint
from .models import EvaluationRun, ModelImport, RegisteredModel

log = logging.getLogger(__name__)

DEFAULT_DEPTHS = [1, 2, 4, 8, 12]
DEFAULT_PAIR_LIMIT = 50
DEMO_SLUG = DEFAULT_MODEL_ID  # the bundled default model's registry row


def parse_depths(value, param: str = "depths") -> list[int]:
    if value in (None, "", []):
        return list(DEFAULT_DEPTHS)
    items = value.split(",") if isinstance(value, str) else value
    try:
        depths = sorted({int(d) for d in items})
    except (TypeError, ValueError):
        raise RegistryError("depths must be integers, e.g. 1,2,4,8,12", param) from None
    if not depths or depths[0] < DEPTH_MIN or depths[-1] > DEPTH_MAX or len(depths) > 12:
        raise RegistryError(f"depths must be {DEPTH_MIN}..{DEPTH_MAX} (at most 12 of them)", param)
    return depths


def parse_paradigms(value, blimp_dir: Path | None = None, param: str = "paradigms") -> list[str]:
    if value in (None, "", []):
        return []
    items = value.split(",") if isinstance(value, str) else value
    names = [str(p).strip() for p in items if str(p).strip()]
    folder = Path(blimp_dir or settings.BLIMP_DIR)
    if folder.is_dir():
        known = {p.stem for p in folder.glob("*.jsonl")}
        unknown = sorted(set(names) - known)
        if unknown:
            raise RegistryError(f"unknown paradigms: {', '.join(unknown[:5])}", param)
    return names


def register_upload(
    fileobj,
    name: str,
    user=None,
    depths=None,
    paradigms=None,
    pair_limit: int | None = DEFAULT_PAIR_LIMIT,
    card=None,
    declares=None,
) -> tuple[RegisteredModel, EvaluationRun | ModelImport]:
    """Validate an uploaded checkpoint (weights_only, out of process) and register it. The portal's own format
    queues its BLiMP evaluation by depth; the programme's queues its import (ONNX export, facts), with progress."""
    name = (name or "").strip()
    if not name:
        raise RegistryError("a name is required", "name")
    if len(name) > 120:
        raise RegistryError("the name is longer than 120 characters", "name")
    depths = parse_depths(depths)
    paradigms = parse_paradigms(paradigms)
    if pair_limit is not None and not 1 <= int(pair_limit) <= 1000:
        raise RegistryError("limit must be 1..1000 pairs per paradigm", "limit")
    model, probe = register_checkpoint(fileobj, name=name, card=card, declares=declares, user=user)
    with transaction.atomic():
        if probe.get("format") == PROGRAMME_FORMAT:
            return model, queue_import(model, user)
        return model, queue_evaluation(model, depths, paradigms, pair_limit, user)


def queue_evaluation(model, depths, paradigms=(), pair_limit=None, user=None, blimp_dir: str = "") -> EvaluationRun:
    """Create the job row and queue its id on commit (the gpu queue runs models_app.tasks.evaluate)."""
    from portal.celery import send_by_name

    run = EvaluationRun.objects.create(
        model=model,
        depths=list(depths),
        paradigms=list(paradigms),
        pair_limit=pair_limit,
        blimp_dir=blimp_dir,
        requested_by=user if getattr(user, "is_authenticated", False) else None,
    )
    transaction.on_commit(lambda: send_by_name("models_app.tasks.evaluate", run.pk))
    return run


def register_demo_model() -> tuple[RegisteredModel | None, bool]:
    """Upsert every bundled model's registry row (models_app.bundled); returns the default model's (row, created)."""
    from .bundled import register_bundled_models

    results = register_bundled_models()
    return next(((row, created) for row, created in results if row.slug == DEMO_SLUG), (None, False))


# --- running an evaluation (gpu worker: torch is imported inside) ----------------------------------------------------
MODEL_FAMILY = "tied-anytime"


def pick_device() -> str:
    """EVALUATION_DEVICE when set (cpu or cuda), else CUDA when torch sees a GPU, else the CPU."""
    import torch

    if settings.EVALUATION_DEVICE:
        return settings.EVALUATION_DEVICE
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

    from eqlm.checkpoint import load_checkpoint
    from results.records import ingest_records

    run = EvaluationRun.objects.select_related("model").get(pk=run_id)
    if run.is_finished:
        return run  # idempotent: a redelivered message does nothing
    run.mark_running()
    device = pick_device()
    EvaluationRun.objects.filter(pk=run.pk).update(device=device)
    model, _ = load_checkpoint(run.model.file_path())
    if model.model_class == "ExplicitLM":  # one depth, its layer count
        run.depths = [len(model.layers)]
        EvaluationRun.objects.filter(pk=run.pk).update(depths=run.depths)
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
