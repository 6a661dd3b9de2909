"""Pages of the equilibrium lab: the interactive lab and a job's progress/results page."""

from django.shortcuts import get_object_or_404, render
from django.views.decorators.csrf import ensure_csrf_cookie

from . import services
from .models import LabRun
from .solvers import PRESETS


def _presets() -> list[dict]:
    return [{"key": key, "label": value["label"]} for key, value in PRESETS.items()]


@ensure_csrf_cookie
def index(request):
    recent = LabRun.objects.only("id", "solver", "game_name", "status", "created_at")[:10]
    return render(
        request,
        "lab/index.html",
        {
            "section": "lab",
            "presets": _presets(),
            "recent_runs": recent,
            "limits": {
                "browser_max_size": 12,
                "server_max_size": services.SYNC_LIMITS.max_size,
                "sync_max_steps": services.SYNC_LIMITS.max_steps,
                "job_max_steps": services.JOB_LIMITS.max_steps,
                "max_sweep_runs": services.MAX_SWEEP_RUNS,
            },
        },
    )


def job_detail(request, pk: int):
    run = get_object_or_404(LabRun, pk=pk)
    return render(request, "lab/job.html", {"section": "lab", "run": run, "job": services.job_json(run)})
