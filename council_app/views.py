"""Pages of the council record: the summary, the question-by-question replay and CSV downloads."""

import csv

from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_safe

from . import exports, live, services
from .forms import ReplayFilterForm
from .models import Seed
from .replay import ReplayFilter, replay_questions, sample_tallies

FINDINGS = [
    ("F28", "the player ladder and the choice of baseline"),
    ("F29", "the influence game ties simple averaging"),
    ("F30", "eleven aggregation rules never beat the mean"),
    ("F31", "simulation: calibrated players shrink the game's edge"),
    ("F32", "audit of the oracle headroom"),
    ("F33", "chat-template GSM8K remeasurement"),
    ("F34", "domain routing becomes the bar"),
    ("F36", "cross-examination only ties the router"),
    ("F37", "the equilibrium solve is cheap, the council is not"),
    ("F38", "route-or-aggregate hybrid fails held-out"),
    ("F39", "anchored vote seems to beat the router (retracted)"),
    ("F40", "the anchored gain was extraction redundancy"),
    ("F41", "fresh-seed confirmation: routing with fallback wins"),
    ("F42", "the win is mostly routing"),
    ("F43", "a council with a dominant member gains nothing"),
    ("F46", "answer stability flags correctness"),
    ("F54", "compute-matched sampling and a 7B model"),
]


@require_safe
def index(request):
    context = dict(services.summary())
    players, sort, direction = services.sorted_players(
        request.GET.get("sort"), request.GET.get("dir"), context["players"]
    )
    context.update(
        section="council",
        findings=FINDINGS,
        sorted_players=players,
        player_columns=_sort_links(sort, direction),
        plot_data=_plot_data(context["baselines"]),
        live=live.live_context(),
    )
    return render(request, "council/index.html", context)


@require_safe
def replay(request):
    seeds = list(Seed.objects.values_list("seed", flat=True))
    if not seeds:
        return render(request, "council/replay.html", {"section": "council", "empty": True})
    data = request.GET.copy()
    data.setdefault("seed", str(seeds[0]))
    form = ReplayFilterForm(data)
    if not form.is_valid():
        context = {"section": "council", "form": form, "questions": [], "current": None}
        return render(request, "council/replay.html", context, status=400)
    flt = ReplayFilter(
        seed=form.cleaned_data["seed"],
        domain=form.cleaned_data["domain"],
        rule=form.cleaned_data["rule"],
        outcome=form.cleaned_data["outcome"],
        split=form.cleaned_data["split"],
    )
    questions = replay_questions(flt)
    wanted = form.cleaned_data.get("q")
    position = next((i for i, v in enumerate(questions) if v["question"].index == wanted), 0)
    current = questions[position] if questions else None
    base = reverse("council:replay")

    def link(view):
        return f"{base}?{urlencode({**flt.params(), 'q': view['question'].index})}" if view else None

    context = {
        "section": "council",
        "form": form,
        "filter": flt,
        "questions": [{"view": v, "url": link(v)} for v in questions],
        "current": current,
        "position": position + 1 if current else 0,
        "prev_url": link(questions[position - 1]) if current and position > 0 else None,
        "next_url": link(questions[position + 1]) if current and position + 1 < len(questions) else None,
        "coverage": services.coverage(),
        "tallies": sample_tallies(flt.seed),
        "record": services.CouncilRecord.objects.first(),
    }
    return render(request, "council/replay.html", context)


@require_safe
def table_csv(request, table: str):
    builder = exports.TABLES.get(table)
    if builder is None:
        raise Http404("No such council table.")
    header, rows = builder()
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="council-{table}.csv"'
    writer = csv.writer(response)
    writer.writerow(header)
    writer.writerows(["" if v is None else v for v in row] for row in rows)
    return response


def _sort_links(sort: str, direction: str) -> list[dict]:
    base = reverse("council:index")
    columns = []
    for key, label in services.PLAYER_COLUMNS:
        active = key == sort
        next_dir = "asc" if active and direction == "desc" else ("desc" if active else _default_dir(key))
        columns.append(
            {
                "key": key,
                "label": label,
                "url": f"{base}?{urlencode({'sort': key, 'dir': next_dir})}#players",
                "aria_sort": ("descending" if direction == "desc" else "ascending") if active else "none",
                "numeric": key
                in {"size_b", "mmlu_acc", "arc_challenge_acc", "hellaswag_acc", "gsm8k_flexible", "mixed_arena"},
            }
        )
    return columns


def _default_dir(key: str) -> str:
    return "asc" if key in {"name", "config_sha", "git_commit", "machine"} else "desc"


def _plot_data(baselines: list[dict]) -> list[dict]:
    return [
        {
            "key": b["arm"].key,
            "label": b["arm"].label,
            "accuracy": b["arm"].accuracy,
            "generations": b["arm"].generations_per_request,
            "council": b["arm"].is_council,
        }
        for b in baselines
    ]
