"""Quality and convergence by depth for any registered model: queue it, run it on a worker, read its rows back.

The worker side (`run_convergence_evaluation`) loads the checkpoint in torch and measures with eqlm.convergence
and eqlm.path_independence; the figures are stored as benchmark result rows (experiment "local", arm = the model's
slug), which the dial on /demo/ and the table on /benchmarks/ read back through `stored_figures`
(convergence_figures.py). Metric and condition names:

- `heldout_bits_per_byte`, `residual_median`, `residual_p95`: condition {"depth": d, "solver": s} (fixed depth,
  from a zero start);
- `converged_fraction`: condition {"depth": d, "solver": s, "tol": t}, share of positions with residual < t;
- adaptive halting: `heldout_bits_per_byte`, `mean_iterations`, `converged_fraction` (share that met the
  tolerance before the cap) with condition {"cap": c, "solver": s, "tol": t} (no "depth" key);
- another start (`noise`: N(0, 1), seed 0; `warm`: each position from its predecessor's state), Picard, on the same
  windows: `heldout_bits_per_byte` with condition {"depth": d, "solver": "picard", "start": s} (noise: at the
  depths of LADDER; warm: at the deepest only, since each warm depth is a solve of its own), and at the deepest
  depth `aa_cosine` (the mean cosine between its final states and the zero start's, the AA score of Anil et al.
  2022) and `greedy_agreement` (share of positions whose most likely next byte is the zero start's).

The residual at depth d is ||f(z_{d-1}) - z_{d-1}|| / ||z_{d-1}||; n on every row is the number of positions.
The depths go to EVALUATION_MAX_DEPTH (128, the largest cap a model may declare) whatever the model serves: the
evaluation measures past a model's serving cap on purpose, to show whether more iterations would help.
"""

from __future__ import annotations

from django.db import transaction

from eqlm.convergence import ADAPTIVE_TOLERANCES, tolerance_key
from eqlm.evaluate import COMMITTED, TEXTS, corpus_text, heldout_text, record
from eqlm.limits import DEFAULT_START, DEPTH_MAX, DEPTH_MIN, EVALUATION_DEPTH_MAX, SOLVERS, STARTS

from .models import EvaluationRun
from .services import MODEL_FAMILY, RegistryError, pick_device

DEFAULT_WINDOWS = 64
MAX_WINDOWS = 1000
EVALUATION_MAX_DEPTH = EVALUATION_DEPTH_MAX  # an evaluation setting, not a serving cap (see the module docstring)
LADDER = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128)  # the depths tables and summaries show
COMPARED_STARTS = tuple(sorted(set(STARTS) - {DEFAULT_START}))  # measured against the zero start: noise, warm
NOISE_SEED = 0
DEFAULT_OPTIONS = {
    "solvers": list(SOLVERS),
    "max_depth": EVALUATION_MAX_DEPTH,
    "tolerances": list(ADAPTIVE_TOLERANCES),
    "cap": DEPTH_MAX,  # adaptive halting as served: a model's default cap
    "windows": DEFAULT_WINDOWS,
    "text": "heldout",
    "starts": list(COMPARED_STARTS),
}
FIXED_METRICS = ("heldout_bits_per_byte", "residual_median", "residual_p95")
START_METRICS = ("aa_cosine", "greedy_agreement")
METRICS = (*FIXED_METRICS, "converged_fraction", "mean_iterations", *START_METRICS)
FIGURE_OF = {"heldout_bits_per_byte": "bits_per_byte"}  # the DepthFigures field of a metric named otherwise


def parse_options(data: dict | None) -> dict:
    """Validated options over the defaults; a bad one raises RegistryError naming its field."""
    data = dict(data or {})
    unknown = sorted(set(data) - set(DEFAULT_OPTIONS))
    if unknown:
        raise RegistryError(f"unknown options: {', '.join(unknown)}", unknown[0])
    options = {**DEFAULT_OPTIONS, **{k: v for k, v in data.items() if v not in (None, "")}}
    solvers = options["solvers"]
    solvers = solvers.split(",") if isinstance(solvers, str) else solvers
    if not isinstance(solvers, list | tuple) or not solvers or any(s not in SOLVERS for s in solvers):
        raise RegistryError(f"solvers must be {' and/or '.join(SOLVERS)}", "solvers")
    options["solvers"] = [s for s in SOLVERS if s in solvers]
    starts = options["starts"]
    if isinstance(starts, str):
        starts = [] if starts.strip() == "none" else [s.strip() for s in starts.split(",") if s.strip()]
    if not isinstance(starts, list | tuple) or any(s not in COMPARED_STARTS for s in starts):
        raise RegistryError(f"starts must be none or {' and/or '.join(COMPARED_STARTS)}", "starts")
    options["starts"] = [s for s in COMPARED_STARTS if s in starts]
    for name, low, high in (
        ("max_depth", DEPTH_MIN, EVALUATION_MAX_DEPTH),
        ("cap", DEPTH_MIN, EVALUATION_MAX_DEPTH),
        ("windows", 1, MAX_WINDOWS),
    ):
        try:
            value = int(options[name])
        except (TypeError, ValueError):
            raise RegistryError(f"{name} must be an integer", name) from None
        if not low <= value <= high or str(value) != str(options[name]).strip():
            raise RegistryError(f"{name} must be {low}..{high}", name)
        options[name] = value
    tolerances = options["tolerances"]
    tolerances = tolerances.split(",") if isinstance(tolerances, str) else tolerances
    try:
        tolerances = sorted({tolerance_key(float(t)) for t in tolerances}, reverse=True)
    except (TypeError, ValueError):
        raise RegistryError("tolerances must be numbers, e.g. 0.03,0.01,0.003", "tolerances") from None
    if not 1 <= len(tolerances) <= 8 or not all(0 < t < 1 for t in tolerances):
        raise RegistryError("tolerances must be 1 to 8 numbers between 0 and 1", "tolerances")
    options["tolerances"] = tolerances
    if options["text"] not in TEXTS:
        raise RegistryError(f"text must be one of {', '.join(TEXTS)}", "text")
    return options


def new_convergence_run(model, options: dict | None = None, user=None) -> EvaluationRun:
    """The job row of a quality-and-convergence evaluation (validated options), not yet queued."""
    if model.model_class != "EqLM":
        raise RegistryError("only EqLM checkpoints have depths to iterate", "model")
    options = parse_options(options)
    return EvaluationRun.objects.create(
        model=model,
        kind=EvaluationRun.Kind.CONVERGENCE,
        depths=list(range(1, options["max_depth"] + 1)),
        options=options,
        requested_by=user if getattr(user, "is_authenticated", False) else None,
    )


def queue_convergence_evaluation(model, options: dict | None = None, user=None) -> EvaluationRun:
    """Create the job row and queue its id on commit (models_app.tasks.evaluate on the gpu queue, by kind)."""
    from portal.celery import send_by_name

    run = new_convergence_run(model, options, user)
    transaction.on_commit(lambda: send_by_name("models_app.tasks.evaluate", run.pk))
    return run


def evaluation_text(kind: str, corpus: str = "kjv") -> tuple[bytes, str]:
    """(held-out bytes, where they came from): the held-out slice of the corpus the model was trained on (KJV, or
    the code corpus), or the committed 4 KB KJV slice (`text: slice`, or when the KJV corpus is unavailable)."""
    return heldout_text(kind, lambda: corpus_text(corpus), None if corpus == "code" else COMMITTED)


def run_label(run: EvaluationRun) -> str:
    o = run.options
    solvers = "+".join(o["solvers"])
    return f"local:{run.model.slug}:{run.model.sha256[:12]}:convergence-{o['text']}-{o['windows']}w-{solvers}"


def start_depths(max_depth: int) -> list[int]:
    """The depths the other starts are measured at: LADDER up to max_depth, and max_depth itself (the AA depth)."""
    return sorted({d for d in LADDER if d < max_depth} | {max_depth})


def convergence_records(run: EvaluationRun, evaluation, paths=None) -> list[dict]:
    """Long-format rows (the metric and condition names of the module docstring) for ingest_records; `paths` is
    eqlm.path_independence's PathIndependence of the other starts (None: none measured)."""
    model = run.model
    provenance = model.provenance or {}
    base = {
        "run": run_label(run),
        "experiment": "local",
        "arm": model.slug,
        "seed": provenance.get("seed") if isinstance(provenance.get("seed"), int) else None,
        "step": None,
        "model_family": MODEL_FAMILY,
        "model_name": model.name,
        "num_params": model.num_params,
        "config_hash": str(provenance.get("config_hash", ""))[:128],
        "git_commit": str(provenance.get("git_commit", ""))[:64],
    }
    records = []
    for solver, profile in evaluation.profiles.items():
        for depth, figures in sorted(profile.by_depth.items()):
            condition, n = {"depth": depth, "solver": solver}, figures.positions
            for metric in FIXED_METRICS:
                records.append(record(base, metric, getattr(figures, FIGURE_OF.get(metric, metric)), condition, n=n))
            for tol, share in figures.converged.items():
                records.append(record(base, "converged_fraction", share, {**condition, "tol": tol}, n=n))
    for point in evaluation.adaptive:
        condition = {"cap": point.cap, "solver": point.solver, "tol": point.tol}
        for metric, value in (
            ("heldout_bits_per_byte", point.bits_per_byte),
            ("mean_iterations", point.mean_iterations),
            ("converged_fraction", point.halted_fraction),
        ):
            records.append(record(base, metric, value, condition, n=point.positions))
    for start, found in (paths.starts if paths else {}).items():
        if start == DEFAULT_START:  # the zero start's rows are the fixed-depth Picard rows above
            continue
        for depth, value in sorted(found.bits_per_byte.items()):
            condition = {"depth": depth, "solver": "picard", "start": start}
            records.append(record(base, "heldout_bits_per_byte", value, condition, n=paths.positions))
        condition = {"depth": paths.depths[-1], "solver": "picard", "start": start}
        for metric in START_METRICS:
            records.append(record(base, metric, getattr(found, metric), condition, n=paths.positions))
    return records


def summary(evaluation, source: str, paths=None) -> dict:
    """What the run row keeps: a compact table (the rows hold every figure)."""
    starts = {
        start: {
            "depth": paths.depths[-1],
            "aa_cosine": round(found.aa_cosine, 4),
            "greedy_agreement": round(found.greedy_agreement, 4),
            "bits_per_byte": round(found.bits_per_byte[paths.depths[-1]], 4),
        }
        for start, found in (paths.starts if paths else {}).items()
        if start != DEFAULT_START
    }
    return {
        "backend": evaluation.backend,
        "text": source,
        "windows": evaluation.windows,
        "window": evaluation.window,
        "fixed": {
            solver: {
                str(d): {"bits_per_byte": round(f.bits_per_byte, 4), "converged_0.01": f.converged.get(0.01)}
                for d, f in sorted(profile.by_depth.items())
                if d in LADDER
            }
            for solver, profile in evaluation.profiles.items()
        },
        "adaptive": [
            {
                "solver": p.solver,
                "tol": p.tol,
                "cap": p.cap,
                "mean_iterations": round(p.mean_iterations, 3),
                "bits_per_byte": round(p.bits_per_byte, 4),
                "fixed_bits_per_byte_at_mean_depth": None
                if p.matched_bits_per_byte is None
                else round(p.matched_bits_per_byte, 4),
                "halted_fraction": round(p.halted_fraction, 4),
            }
            for p in evaluation.adaptive
        ],
        "starts": starts,
    }


def measure(run: EvaluationRun, progress=None):
    """Load the checkpoint in torch and run eqlm.evaluate.depth_profiles on the run's text: (evaluation, path
    independence of the other starts or None, source)."""
    import torch

    from eqlm.checkpoint import load_checkpoint
    from eqlm.evaluate import depth_profiles, windows_of

    o = run.options
    device = pick_device()
    EvaluationRun.objects.filter(pk=run.pk).update(device=device)
    model, data = load_checkpoint(run.model.file_path())
    if not hasattr(model, "solve"):
        raise ValueError("only EqLM checkpoints have depths to iterate")
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    corpus = ((data.get("provenance") or {}).get("train_settings") or {}).get("corpus", "kjv")
    text, source = evaluation_text(o["text"], corpus)
    windows = windows_of(text, model.config.max_positions, limit=o["windows"])
    if not len(windows):
        raise ValueError("the held-out text is shorter than one window")
    depths = start_depths(o["max_depth"])
    evaluation, paths = depth_profiles(model, windows, o, device, depths, seed=NOISE_SEED, progress=progress)
    return evaluation, paths, f"{source}, {len(windows)} windows of {model.config.max_positions} bytes"


def run_convergence_evaluation(run_id: int) -> EvaluationRun:
    """Measure on the worker, store the rows (idempotent: rows are keyed by run, metric and condition)."""
    from results.records import ingest_records

    run = EvaluationRun.objects.select_related("model").get(pk=run_id)
    if run.is_finished:
        return run  # a redelivered message does nothing
    run.mark_running()
    run.report_progress(0.0, f"quality and convergence, {run.options.get('windows')} windows")
    evaluation, paths, source = measure(run, progress=lambda f, m: run.report_progress(0.95 * f, m))
    records = convergence_records(run, evaluation, paths)
    created = ingest_records(records, source_name=f"inference:convergence:{run.model.slug}")
    EvaluationRun.objects.filter(pk=run.pk).update(results=summary(evaluation, source, paths), rows_written=created)
    run.refresh_from_db()
    run.mark_done()
    return run
