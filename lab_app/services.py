"""Lab services: validate solve requests, run them synchronously or as LabRun jobs with progress."""

from __future__ import annotations

import itertools
import time

from django.conf import settings
from django.db import transaction

from .models import LabRun
from .solvers import PARAMETERS, Limits, SolverInputError, TimeLimitExceeded, refuse_unknown, solve

# Synchronous answers stay small; jobs may run longer and enumerate larger games.
SYNC_LIMITS = Limits(max_size=50, max_steps=20_000, max_path_points=5000, max_enumeration_size=8, time_limit=5.0)
JOB_LIMITS = Limits(max_size=50, max_steps=200_000, max_path_points=20_000, max_enumeration_size=12, time_limit=600.0)
MAX_SWEEP_VALUES = 25
MAX_SWEEP_RUNS = 200
SWEEP_RECORD = 100


def job_time_limit() -> float:
    """Seconds a lab job may run: the task's soft limit, unless LAB_JOB_TIME_LIMIT is smaller."""
    soft = float(getattr(settings, "CELERY_TASK_SOFT_TIME_LIMIT", 600))
    return min(soft, float(getattr(settings, "LAB_JOB_TIME_LIMIT", soft)))


SYNC_TIME_LIMIT = 10.0


def solve_now(spec: dict) -> dict:
    """Answer a small problem synchronously (raises SolverInputError naming the bad field).

    Long solvers stop at SYNC_TIME_LIMIT seconds with TimeLimitExceeded: such problems belong in a job.
    """
    return solve(spec, SYNC_LIMITS, deadline=time.monotonic() + SYNC_TIME_LIMIT)


def _sweep_combinations(spec: dict) -> list[dict]:
    """The cartesian product of `sweep` ({param: [values]}) as a list of spec variants."""
    sweep = spec.get("sweep")
    if sweep is None:
        return [spec]
    if not isinstance(sweep, dict) or not sweep:
        raise SolverInputError("sweep", "must be an object mapping a parameter name to a list of values")
    keys = sorted(sweep)  # a fixed order: PostgreSQL's jsonb does not keep the order the keys were sent in
    solver = spec.get("solver")
    if solver in PARAMETERS:  # an unknown solver is refused by name further on
        refuse_unknown((key for key in keys if key != "seed"), PARAMETERS[solver], "sweep", f"a parameter of {solver}")
    for key in keys:
        values = sweep[key]
        if not isinstance(values, list) or not values:
            raise SolverInputError(f"sweep.{key}", "must be a non-empty list")
        if len(values) > MAX_SWEEP_VALUES:
            raise SolverInputError(f"sweep.{key}", f"has {len(values)} values; at most {MAX_SWEEP_VALUES} are allowed")
    total = 1
    for key in keys:
        total *= len(sweep[key])
    if total > MAX_SWEEP_RUNS:
        raise SolverInputError("sweep", f"asks for {total} runs; at most {MAX_SWEEP_RUNS} are allowed")
    game = spec.get("game")
    variants = []
    for combo in itertools.product(*(sweep[k] for k in keys)):
        params = dict(spec.get("params") or {})
        variant_game = game
        for key, value in zip(keys, combo, strict=True):
            if key == "seed":
                if not (isinstance(game, dict) and game.get("preset") == "random"):
                    raise SolverInputError("sweep.seed", "sweeping seeds needs the random game preset")
                variant_game = {**game, "seed": value}
            else:
                params[key] = value
        if spec.get("solver") in ("mmd", "gda"):
            params.setdefault("record", SWEEP_RECORD)
        variants.append(
            {
                "game": variant_game,
                "solver": spec.get("solver"),
                "params": params,
                "_point": dict(zip(keys, combo, strict=True)),
            }
        )
    return variants


def validate_job_spec(data) -> tuple[dict, list[dict]]:
    """The normalised job spec and its runs; every run is validated before anything is stored."""
    if not isinstance(data, dict):
        raise SolverInputError("spec", "must be a JSON object")
    spec = {key: data.get(key) for key in ("game", "solver", "params", "sweep") if key in data}
    variants = _sweep_combinations(spec)
    for variant in variants:
        run = {k: v for k, v in variant.items() if k != "_point"}
        solve(run, JOB_LIMITS, validate_only=True)
    return spec, variants


def create_job(data, owner=None) -> LabRun:
    """Validate, store a LabRun and queue its task once the row is committed."""
    from portal.celery import send_by_name

    spec, variants = validate_job_spec(data)
    first = solve({k: v for k, v in variants[0].items() if k != "_point"}, JOB_LIMITS, validate_only=True)
    with transaction.atomic():
        run = LabRun.objects.create(
            kind=LabRun.KIND_SWEEP if "sweep" in spec else LabRun.KIND_SOLVE,
            solver=spec["solver"],
            game_name=first["game"]["name"][:100],
            spec=spec,
            owner=owner if owner is not None and owner.is_authenticated else None,
        )
        transaction.on_commit(lambda: send_by_name("lab_app.tasks.run_lab_job", run.pk))
    return run


def _summary(result: dict) -> dict:
    """What a sweep keeps of one run: final metrics and the NashConv trace, not the trajectories."""
    solver = result["solver"]
    if solver in ("mmd", "gda"):
        keep = ("iterations", "converged", "last", "average", "trace")
    elif solver == "qre":
        keep = ("lambda", "x", "y", "residual", "converged", "newton_iterations", "method", "nashconv")
    elif solver == "qre_path":
        keep = ("turning_points", "bifurcations", "status", "lambda_end", "limit")
    else:
        keep = ("method", "complete", "equilibria", "zero_sum")
    out = {key: result[key] for key in keep if key in result}
    out["game"] = {"name": result["game"]["name"], "m": result["game"]["m"], "n": result["game"]["n"]}
    out["elapsed_ms"] = result["elapsed_ms"]
    return out


def run_job(run_id: int) -> LabRun | None:
    """Run a LabRun to completion (idempotent: a finished run is left alone)."""
    run = LabRun.objects.filter(pk=run_id).first()
    if run is None or run.is_finished:
        return run
    run.mark_running()
    limit = job_time_limit()
    deadline = time.monotonic() + limit
    try:
        _spec, variants = validate_job_spec(run.spec)
        if run.kind == LabRun.KIND_SOLVE:
            run.report_progress(0.05, "solving")
            result = solve(variants[0], JOB_LIMITS, deadline=deadline)
        else:
            runs = []
            for i, variant in enumerate(variants):
                if time.monotonic() > deadline:
                    raise TimeLimitExceeded(f"stopped after {i} of {len(variants)} runs")
                point = variant.pop("_point")
                solved = solve(variant, JOB_LIMITS, deadline=deadline)
                runs.append({"point": point, **_summary(solved)})
                run.report_progress((i + 1) / len(variants), f"run {i + 1} of {len(variants)}")
            result = {"solver": run.solver, "sweep": run.spec["sweep"], "runs": runs, "metric": "nashconv"}
    except TimeLimitExceeded as exc:
        run.mark_failed(f"The job exceeded its time limit of {limit:g} s ({exc}). Ask for fewer steps or runs.")
        return run
    except SolverInputError as exc:
        run.mark_failed(f"Invalid input: {exc}")
        return run
    except (ArithmeticError, ValueError, RuntimeError) as exc:
        run.mark_failed(f"The solver failed on this game: {exc}")
        return run
    run.result = result
    run.save(update_fields=["result"])
    run.mark_done()
    return run


def job_json(run: LabRun, request=None) -> dict:
    url = run.get_absolute_url()
    api_url = f"/api/lab/jobs/{run.pk}/"
    if request is not None:
        url, api_url = request.build_absolute_uri(url), request.build_absolute_uri(api_url)
    return {
        "id": run.pk,
        "kind": run.kind,
        "solver": run.solver,
        "game": run.game_name,
        "status": run.status,
        "progress": run.progress,
        "progress_message": run.progress_message,
        "error": run.error or None,
        "spec": run.spec,
        "result": run.result if run.status == "done" else None,
        "created_at": run.created_at.isoformat() if run.created_at else None,
        "started_at": run.started_at.isoformat() if run.started_at else None,
        "finished_at": run.finished_at.isoformat() if run.finished_at else None,
        "url": url,
        "api_url": api_url,
    }
