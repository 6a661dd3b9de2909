"""The programme's BLiMP protocol on a worker: its five paradigms' first 200 pairs, one sentence at a time at the
file's own solver settings, on CUDA where present; rows carry the file's hash, the protocol, device and dtype, and
the count stands beside the published figure of the run the checkpoint declares itself to be."""

from __future__ import annotations

import math
import time
from pathlib import Path

from django.conf import settings

from .facts import record_metric
from .models import EvaluationRun, RegisteredModel

PROTOCOL_PROGRAMME = "programme"
PROTOCOL_FULL = "full"
PROTOCOLS = (PROTOCOL_PROGRAMME, PROTOCOL_FULL)


def published_figure(declared: dict | None) -> dict | None:
    """The published BLiMP accuracy of the declared run (experiment, arm, seed) from the stored result rows."""
    if not declared:
        return None
    from results.experiment_names import resolve
    from results.models import ResultRow

    rows = ResultRow.objects.filter(
        experiment__in=resolve(declared["experiment"]),  # exp13 names the rows stored as exp13_…
        arm_label=declared["arm"],
        seed=declared["seed"],
        metric="blimp_accuracy",
        step__isnull=True,
    ).exclude(experiment="local")
    row = rows.select_related("source_file").order_by("id").first()
    if row is None:
        return None
    return {"accuracy": row.value, "n": row.n, "experiment": row.experiment, "arm": row.arm_label, "seed": row.seed}


def beside_published(num_correct: int, num_total: int, published: dict | None) -> dict | None:
    """The difference in pairs from the published count, with the binomial standard error in pairs, sqrt(n p (1-p))."""
    if not published:
        return None
    n = published.get("n") or num_total
    p = float(published["accuracy"])
    published_correct = round(p * n)
    scale = num_total / n if n else 1.0
    return {
        **published,
        "num_correct": published_correct,
        "difference_pairs": num_correct - published_correct * scale,
        "binomial_se_pairs": math.sqrt(num_total * p * (1 - p)),
    }


def protocol_records(run: EvaluationRun, outcome: dict) -> list[dict]:
    model = run.model
    protocol = run.options.get("protocol", PROTOCOL_PROGRAMME)
    return [
        {
            "run": f"local:{model.slug}:{model.sha256[:12]}:blimp-{protocol}",
            "experiment": "local",
            "arm": model.slug,
            "seed": None,
            "metric": "blimp_accuracy",
            "value": outcome["accuracy"],
            "unit": "fraction",
            "n": outcome["num_total"],
            "step": None,
            "condition": {
                "protocol": protocol,
                "sha256": model.sha256,
                "device": outcome["device"],
                "dtype": outcome["dtype"],
            },
            "model_family": "tied-anytime" if model.model_class == "EqLM" else "explicit",
            "model_name": model.name,
            "num_params": model.num_params,
            "config_hash": "",
            "git_commit": "",
        }
    ]


def run_protocol_evaluation(run_id: int) -> EvaluationRun:
    """Score the programme's protocol (or every paradigm) on a programme checkpoint, with progress on the row."""
    from eqlm.programme.checkpoint import load_programme_model
    from eqlm.programme.protocol import PAIRS_PER_PARADIGM, PARADIGMS, run_programme_protocol, use_cpu_threads
    from eqlm.tokenizers import get_tokenizer
    from results.records import ingest_records

    from .services import pick_device

    run = EvaluationRun.objects.select_related("model").get(pk=run_id)
    if run.is_finished:
        return run
    run.mark_running()
    device = pick_device()
    EvaluationRun.objects.filter(pk=run.pk).update(device=device)
    protocol = run.options.get("protocol", PROTOCOL_PROGRAMME)
    model, _ = load_programme_model(run.model.file_path(), max_bytes=settings.MODEL_MAX_BYTES)
    model.to(device)
    if device == "cpu":
        use_cpu_threads()
    if protocol == PROTOCOL_PROGRAMME:  # its 5 paradigms, the first 200 pairs of each (or of `pair_limit`)
        paradigms, per_paradigm = list(PARADIGMS), min(run.pair_limit or PAIRS_PER_PARADIGM, PAIRS_PER_PARADIGM)
    else:  # every paradigm in BLIMP_DIR (or the row's), all pairs (or the first `pair_limit` of each)
        paradigms, per_paradigm = run.paradigms or None, run.pair_limit
    run.report_progress(0.0, f"{protocol} protocol on {device}")
    started = time.perf_counter()
    result = run_programme_protocol(
        model,
        get_tokenizer("gpt2").encode,
        Path(run.blimp_dir or settings.BLIMP_DIR),
        device=device,
        paradigms=paradigms,
        per_paradigm=per_paradigm,
        progress=lambda done, total: run.report_progress(0.95 * done / max(total, 1), f"{done}/{total} pairs"),
    )
    outcome = {
        "protocol": protocol,
        "num_correct": result["num_correct"],
        "num_total": result["num_total"],
        "accuracy": result["accuracy"],
        "device": device,
        "dtype": "float32",
        "seconds": round(time.perf_counter() - started, 2),
        "pairs_per_second": round(result["num_total"] / max(time.perf_counter() - started, 1e-9), 2),
        "sha256": run.model.sha256,
    }
    outcome["published"] = beside_published(
        result["num_correct"], result["num_total"], published_figure((run.model.provenance or {}).get("declared"))
    )
    created = ingest_records(protocol_records(run, outcome), source_name=f"inference:blimp-{protocol}:{run.model.slug}")
    EvaluationRun.objects.filter(pk=run.pk).update(results=outcome, rows_written=created)
    record_metric(run.model, f"blimp_{protocol}", outcome)
    run.refresh_from_db()
    run.mark_done()
    return run


def is_protocol_run(kind: str, options: dict) -> bool:
    return kind == EvaluationRun.Kind.BLIMP and (options or {}).get("protocol") in PROTOCOLS


def create_protocol_run(
    model: RegisteredModel, protocol: str = PROTOCOL_PROGRAMME, user=None, pair_limit: int | None = None
) -> EvaluationRun:
    """The row of a BLiMP evaluation by a protocol, for a programme checkpoint (refused for a byte model)."""
    from .imports import RegistryError

    if protocol not in PROTOCOLS:
        raise RegistryError(f"protocol must be one of {', '.join(PROTOCOLS)}", "protocol")
    if (model.provenance or {}).get("format") != "programme":
        raise RegistryError(
            f"the {protocol!r} protocol scores GPT-2 BPE checkpoints in the programme's format; {model.slug!r} is a "
            "portal byte model (use BLiMP by depth)",
            "protocol",
        )
    if pair_limit is not None and not 1 <= int(pair_limit) <= 1000:
        raise RegistryError("limit must be 1..1000 pairs per paradigm", "limit")
    run = EvaluationRun.objects.create(
        model=model,
        kind=EvaluationRun.Kind.BLIMP,
        options={"protocol": protocol},
        depths=[],
        pair_limit=pair_limit,
        requested_by=user if getattr(user, "is_authenticated", False) else None,
    )
    return run


def queue_protocol_evaluation(
    model: RegisteredModel, protocol: str = PROTOCOL_PROGRAMME, user=None, pair_limit: int | None = None
) -> EvaluationRun:
    """Create the row and queue its id on commit (the gpu queue runs models_app.tasks.evaluate)."""
    from django.db import transaction

    from portal.celery import send_by_name

    run = create_protocol_run(model, protocol, user, pair_limit)
    transaction.on_commit(lambda: send_by_name("models_app.tasks.evaluate", run.pk))
    return run
