"""Reading a model's stored convergence figures back from its result rows (web side: no torch).

The rows are those models_app/convergence.py writes (its docstring names the metrics and their conditions); the
dial's convergence panel, the /benchmarks/ convergence table, the committed local results and the evaluate command
read them through `stored_figures`.
"""

from __future__ import annotations

from eqlm.limits import DEFAULT_START, SOLVERS

from .convergence import COMPARED_STARTS, FIXED_METRICS, METRICS, START_METRICS
from .models import RegisteredModel


def stored_figures(slug: str) -> dict:
    """The model's convergence figures from its result rows, for charts: {} when none are stored.

    Only rows of the registered checkpoint count (the run label carries its sha256), so a model whose files were
    replaced under the same id never shows its predecessor's figures. When several evaluations exist (different
    text or window counts), the one that measured the most positions (then the newest) is used.
    Shape: {"run", "positions", "solvers": {s: {"depth": [...], "heldout_bits_per_byte": [...], "residual_median":
    [...], "residual_p95": [...], "converged": {tol: [...]}}}, "adaptive": [...], "starts": {start: {"depth": [...],
    "heldout_bits_per_byte": [...], "at_depth": d, "aa_cosine": x, "greedy_agreement": x}}} (starts: Picard from
    another start than zero, the AA score and greedy agreement against zero at depth `at_depth`; {} when none).
    """
    from results.models import ResultRow

    rows = list(
        ResultRow.objects.filter(experiment="local", arm_label=slug, metric__in=METRICS)
        .values_list("arm__run__run_id", "metric", "condition", "value", "n", "id")
        .order_by("id")
    )
    runs = _runs_of_the_registered_checkpoint(rows, slug)
    if not runs:
        return {}
    chosen = max(runs, key=lambda r: runs[r])
    solvers, adaptive, starts = _gather(rows, chosen)
    out = {"run": chosen, "positions": runs[chosen][0], "solvers": {}, "adaptive": [], "starts": {}}
    for solver in [s for s in SOLVERS if s in solvers]:
        out["solvers"][solver] = _solver_series(solvers[solver])
    for start in [s for s in COMPARED_STARTS if s in starts]:
        by_depth = starts[start].pop("by_depth")
        depths = sorted(by_depth)
        out["starts"][start] = {"depth": depths, "heldout_bits_per_byte": [by_depth[d] for d in depths]}
        out["starts"][start] |= starts[start]  # at_depth, aa_cosine, greedy_agreement
    out["adaptive"] = _adaptive_points(adaptive, out["solvers"])
    return out


def _runs_of_the_registered_checkpoint(rows: list, slug: str) -> dict[str, tuple[int, int]]:
    """{run id: (positions, last row id)} of the evaluations of the checkpoint registered under `slug`."""
    registered = RegisteredModel.objects.filter(slug=slug).values_list("sha256", flat=True).first()
    mark = f":{registered[:12]}:" if registered else None
    runs: dict[str, tuple[int, int]] = {}
    for run_id, metric, condition, _, n, pk in rows:
        if mark and mark not in run_id:
            continue
        if metric == "heldout_bits_per_byte" and "solver" in (condition or {}):
            runs[run_id] = max(runs.get(run_id, (0, 0)), (n or 0, pk))
    return runs


def _gather(rows: list, chosen: str) -> tuple[dict, dict, dict]:
    """The chosen run's rows sorted into fixed-depth series by solver, adaptive points and other starts."""
    solvers: dict[str, dict] = {}
    adaptive: dict[tuple, dict] = {}
    starts: dict[str, dict] = {}
    for run_id, metric, condition, value, _n, _ in rows:
        condition = condition or {}
        if run_id != chosen or "solver" not in condition:
            continue
        solver = condition["solver"]
        if condition.get("start", DEFAULT_START) != DEFAULT_START:
            per = starts.setdefault(condition["start"], {"by_depth": {}})
            if metric in START_METRICS:
                per[metric], per["at_depth"] = value, int(condition["depth"])
            elif metric == "heldout_bits_per_byte":
                per["by_depth"][int(condition["depth"])] = value
        elif "depth" in condition:
            per = solvers.setdefault(solver, {"by_depth": {}, "converged": {}})
            depth = int(condition["depth"])
            if metric == "converged_fraction":
                per["converged"].setdefault(str(condition["tol"]), {})[depth] = value
            else:
                per["by_depth"].setdefault(depth, {})[metric] = value
        elif "cap" in condition:
            key = (solver, condition["tol"], condition["cap"])
            point = adaptive.setdefault(key, {"solver": solver, "tol": condition["tol"], "cap": condition["cap"]})
            point[metric] = value
    return solvers, adaptive, starts


def _solver_series(per: dict) -> dict:
    depths = sorted(per["by_depth"])
    series = {"depth": depths}
    for metric in FIXED_METRICS:
        series[metric] = [per["by_depth"][d].get(metric) for d in depths]
    series["converged"] = {
        tol: [per["converged"][tol].get(d) for d in depths] for tol in sorted(per["converged"], key=float)
    }
    return series


def _adaptive_points(adaptive: dict, fixed_by_solver: dict) -> list[dict]:
    """The adaptive points in solver order, tightest tolerance last, each with the fixed depth's bits/byte at its
    mean iteration count (eqlm.convergence.matched_fixed_depth) when the fixed-depth curve is stored."""
    from eqlm.convergence import matched_fixed_depth

    points = []
    for key in sorted(adaptive, key=lambda k: (SOLVERS.index(k[0]) if k[0] in SOLVERS else 9, -k[1])):
        point = adaptive[key]
        fixed = fixed_by_solver.get(point["solver"])
        if fixed and point.get("mean_iterations") is not None:
            curve = dict(zip(fixed["depth"], fixed["heldout_bits_per_byte"], strict=True))
            matched = matched_fixed_depth({d: v for d, v in curve.items() if v is not None}, point["mean_iterations"])
            point["fixed_bits_per_byte_at_mean_depth"] = matched
        points.append(point)
    return points
