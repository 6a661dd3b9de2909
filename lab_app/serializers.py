"""Request shapes of the lab API (documented in the schema) and the checks made before any solver runs.

The solvers validate each field themselves (lab_app/solvers/); what lives here is what only the API can
judge: numbers that cannot be doubles (`10**400`) and the total work one job may ask for.
"""

from __future__ import annotations

from django.conf import settings
from rest_framework import serializers

from .solvers import SOLVERS, SolverInputError, solve

MAX_FLOAT = 1.7976931348623157e308
# Work of one run, in units of steps x m x n: Newton for one QRE is a few dozen steps, a path point about ten,
# support enumeration about 2**min(m, n) supports.
QRE_STEPS = 100
PATH_STEPS_PER_POINT = 10


class SolveRequestSerializer(serializers.Serializer):
    """`POST /api/lab/solve`: a game, a solver and its parameters."""

    game = serializers.JSONField(
        help_text='A preset name ("biased_rps"), {"preset": "random", "m", "n", "seed"}, or {"A": [[...]], "B": ...}.'
    )
    solver = serializers.ChoiceField(choices=list(SOLVERS))
    params = serializers.DictField(required=False, help_text="The solver's parameters (see /lab/ for each).")


class JobRequestSerializer(SolveRequestSerializer):
    """`POST /api/lab/jobs/`: a solve, optionally swept over parameter values (a cartesian product)."""

    sweep = serializers.DictField(
        child=serializers.ListField(),
        required=False,
        help_text='{"parameter": [values]}: each key a parameter of the solver (or "seed" for the random game).',
    )


def _field_for(trail: tuple) -> str:
    """The name an error gives for a value found at `trail` inside the request: `game.A`, `params.eta`."""
    if not trail:
        return "spec"
    head = str(trail[0])
    if head in ("game", "params", "sweep") and len(trail) > 1 and isinstance(trail[1], str):
        return f"{head}.{trail[1]}"
    return head


def check_numbers(data) -> None:
    """Every number must be a double: an integer like 10**400 is refused naming its field (`game.A`)."""
    stack = [((), data)]
    while stack:
        trail, value = stack.pop()
        if isinstance(value, dict):
            stack.extend(((*trail, key), child) for key, child in value.items())
        elif isinstance(value, list):
            stack.extend(((*trail, index), child) for index, child in enumerate(value))
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_FLOAT:
            raise SolverInputError(_field_for(trail), "holds a number too large for a 64-bit float")


def run_work(normalised: dict) -> int:
    """Work units of one validated run (as `solve(validate_only=True)` returns it): steps x m x n."""
    params, game = normalised["params"], normalised["game"]
    m, n = int(game["m"]), int(game["n"])
    solver = normalised["solver"]
    if solver in ("mmd", "gda"):
        steps = int(params.get("steps", 1))
    elif solver == "qre":
        steps = QRE_STEPS
    elif solver == "qre_path":
        steps = int(params.get("max_points", 1)) * PATH_STEPS_PER_POINT
    else:
        steps = 2 ** min(m, n)
    return steps * m * n


def check_work(spec: dict, normalised_runs: list[dict]) -> int:
    """The job's total work (runs x steps x m x n); refused over LAB_JOB_MAX_WORK."""
    total = sum(run_work(run) for run in normalised_runs)
    cap = settings.LAB_JOB_MAX_WORK
    if total > cap:
        field = "sweep" if spec.get("sweep") else "params.steps"
        raise SolverInputError(
            field,
            f"asks for {total:,} units of work (runs × steps × m × n) in {len(normalised_runs)} run(s); "
            f"at most {cap:,} are allowed per job",
        )
    return total


def check_job_request(data) -> None:
    """Everything a job request must pass before its row is stored (raises SolverInputError naming the field)."""
    from .services import JOB_LIMITS, validate_job_spec

    check_numbers(data)
    if isinstance(data, dict) and data.get("params") is not None and not isinstance(data["params"], dict):
        raise SolverInputError("params", "must be an object")  # before the sweep copies it into each run
    spec, variants = validate_job_spec(data)
    runs = [
        solve({k: v for k, v in variant.items() if k != "_point"}, JOB_LIMITS, validate_only=True)
        for variant in variants
    ]
    check_work(spec, runs)
