"""Pages of the experiments: the list, and one experiment's registration, figures, verdict and runs."""

import json

from django.shortcuts import get_object_or_404, render

from . import services
from .criterion import VERDICT_TEXT
from .models import Experiment

BADGES = {"validated": "badge-ok", "missed": "badge-bad", "pending": "badge-neutral", "inconclusive": "badge-warn"}


def index(request):
    items = []
    for experiment in Experiment.objects.select_related("predecessor"):
        summary = services.experiment_summary(experiment)
        summary.update(
            verdict_text=VERDICT_TEXT[summary["verdict"]],
            badge=BADGES[summary["verdict"]],
            registered=experiment.registered_at,
        )
        items.append(summary)
    return render(request, "experiments/index.html", {"section": "experiments", "experiments": items})


def _badged(outcome: dict, per_seed_parts: bool = True) -> dict:
    """The verdict tree with each node's badge class; without the per-seed parts, the criterion as registered."""
    parts = [p for p in outcome["parts"] if per_seed_parts or not p["label"].startswith("seed ")]
    return {**outcome, "badge": BADGES[outcome["status"]], "parts": [_badged(p, per_seed_parts) for p in parts]}


def detail(request, slug: str):
    experiment = get_object_or_404(Experiment.objects.select_related("predecessor"), slug=slug)
    data = services.experiment_detail(experiment)
    plot = {
        "arms": [
            {"label": arm["label"], "series": [s for s in arm["series"] if s["metric"] == "heldout_bits_per_byte"]}
            for arm in data["figures"]
        ]
    }
    context = {
        "section": "experiments",
        "experiment": experiment,
        "data": data,
        "verdict_tree": _badged(data["outcome"]),
        "criterion_tree": _badged(data["outcome"], per_seed_parts=False),
        "criterion_json": json.dumps(experiment.criterion, indent=1, ensure_ascii=False),
        "verdict_badge": BADGES[data["verdict"]],
        "verdict_text": VERDICT_TEXT[data["verdict"]],
        "plot": plot if any(arm["series"] for arm in plot["arms"]) else None,
        "live": any(r["status"] in ("queued", "running") for r in data["runs"]),
    }
    return render(request, "experiments/detail.html", context)
