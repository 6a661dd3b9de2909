"""Pages of the benchmark tables: every table, one table with its plot and rows, runs, compare, uploads."""

import csv
import io
import json

from django.conf import settings
from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.core.cache import cache
from django.core.paginator import Paginator
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.csrf import csrf_exempt, csrf_protect

from results import stats
from results.experiment_names import resolve, stored_experiments
from results.models import Arm, ResultRow, Run, SourceFile
from results.records import tables_cache_version

from . import tables, upload_review
from .models import Comparison
from .overview import overview
from .parsers import FORMATS, IngestError
from .uploads import SizeLimitedUploadHandler, UploadRefused, queue_uploads, validate_upload_batch


def index(request):
    view = overview([tables.build_table(c) for c in Comparison.objects.all()])
    sections = [
        ("programme-record", "The programme's record",
         "Each table recomputes figures the programme published, from the rows of its own runs.", view["programme"]),
        ("portal-models", "This portal's own models",
         "Measured on the small models this portal trains and serves, beside the programme's claims they echo.",
         view["portal"]),
    ]  # fmt: skip
    context = {
        "section": "benchmarks",
        "view": view,
        "sections": [s for s in sections if s[3]],
        "row_count": ResultRow.objects.count(),
        "run_count": Run.objects.count(),
    }
    return render(request, "benchmarks/index.html", context)


ROWS_PER_PAGE = 100


def detail(request, slug: str):
    comparison = get_object_or_404(Comparison, slug=slug)
    table = tables.build_table(comparison)
    rows = Paginator(table["provenance"], ROWS_PER_PAGE).get_page(request.GET.get("rows"))
    pages = list(rows.paginator.get_elided_page_range(rows.number, on_each_side=2, on_ends=1))
    context = {"section": "benchmarks", "table": table, "plot": table["plot"], "rows": rows, "row_pages": pages}
    return render(request, "benchmarks/detail.html", context)


def download(request, slug: str, ext: str):
    comparison = get_object_or_404(Comparison, slug=slug)
    table = tables.build_table(comparison)
    if ext == "json":
        response = JsonResponse(table, json_dumps_params={"indent": 1, "ensure_ascii": False})
    else:
        buffer = io.StringIO()
        csv.writer(buffer).writerows(tables.table_csv_rows(table))
        response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{slug}.{ext}"'
    return response


def rows_download(request, slug: str):
    """The per-seed rows behind a table as CSV."""
    table = tables.build_table(get_object_or_404(Comparison, slug=slug))
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    columns = ["run", "experiment", "arm", "seed", "metric", "condition", "value", "n", "config_hash", "git_commit",
               "source", "pointer"]  # fmt: skip
    writer.writerow(columns)
    for row in table["provenance"]:
        writer.writerow([json.dumps(row[c]) if c == "condition" else row[c] for c in columns])
    response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{slug}-rows.csv"'
    return response


def runs(request):
    filters = {k: request.GET.get(k, "").strip() for k in ("experiment", "arm", "seed", "metric")}
    seed = filters["seed"]
    if seed and not seed.lstrip("-").isdigit():
        messages.error(request, "Seed must be a whole number.")
        qs = Run.objects.none()
    else:
        qs = Run.objects.matching(filters["experiment"], filters["arm"], int(seed) if seed else None, filters["metric"])
    page = Paginator(qs, 50).get_page(request.GET.get("page"))
    experiments = stored_experiments()
    wanted = filters["experiment"]
    context = {
        "section": "benchmarks",
        "page": page,
        "filters": filters,
        # The programme's name (exp10) stays selected even though its rows are stored as exp10_5090.
        "experiments": experiments if not wanted or wanted in experiments else [wanted, *experiments],
        "stored_as": [name for name in resolve(wanted, experiments) if name != wanted],
        "arms": Arm.objects.labels(),
        "metrics": choices()["metrics"],
        "query": "&".join(f"{k}={v}" for k, v in filters.items() if v),
    }
    return render(request, "benchmarks/runs.html", context)


def run_detail(request, run_id: str):
    run = get_object_or_404(Run.objects.select_related("source_file"), run_id=run_id.strip("/"))
    arms = []
    curves = {}
    for arm in run.arms.all():
        final = list(
            arm.rows.filter(step__isnull=True).select_related("source_file").order_by("metric", "condition_key")
        )
        curve = list(
            arm.rows.filter(metric="train_loss", step__isnull=False).order_by("step").values_list("step", "value")
        )
        if curve:
            curves[arm.label] = {"step": [s for s, _ in curve], "loss": [v for _, v in curve]}
        arms.append({"arm": arm, "rows": final, "curve_points": len(curve)})
    context = {
        "section": "benchmarks",
        "run": run,
        "arms": arms,
        "curves": curves,
        "config_json": json.dumps(run.config, indent=1, ensure_ascii=False)[:20000],
        "tables": [
            c for c in Comparison.objects.all() if run.experiment in (c.treatment_experiment, c.baseline_experiment)
        ],
    }
    return render(request, "benchmarks/run_detail.html", context)


def _held_batch(request):
    """The batch the uploader was asked about: (paired, format) on confirm; (None, "") on cancel or a stale token."""
    token = request.POST.get("held", "")
    if request.POST.get("decision") != "confirm":
        upload_review.discard(token)
        messages.info(request, "Upload cancelled: nothing was stored.")
        return None, ""
    released = upload_review.release(token, request.user.pk)
    if released is None:
        messages.error(request, "That upload is no longer waiting for confirmation; choose the files again.")
        return None, ""
    return released


def _queue(request, paired, fmt) -> None:
    try:
        stored = queue_uploads(paired, fmt=fmt, uploader=request.user)
    except IngestError as exc:
        messages.error(request, exc.message)
        stored = []
    for hint, source, duplicate in stored:
        if duplicate:
            messages.info(request, f"{hint}: identical bytes already uploaded as #{source.pk}; nothing new.")
        else:
            messages.success(request, f"{hint}: queued as upload #{source.pk}.")


def choices() -> dict:
    """Distinct experiment:arm pairs and metrics for the pickers: a scan of every row, so cached per ingest."""
    key = f"benchmarks:choices:{tables_cache_version()}"
    found = cache.get(key)
    if found is None:
        found = ResultRow.objects.picker_choices()
        cache.set(key, found, 600)
    return found


def compare_page(request):
    options = choices()["sides"]
    metrics = choices()["final_metrics"]
    treatment = request.GET.get("treatment", "exp32:C1" if "exp32:C1" in options else (options[0] if options else ""))
    baseline = request.GET.get("baseline", "exp10_5090:A1" if "exp10_5090:A1" in options else treatment)
    metric = request.GET.get("metric", "blimp_accuracy")
    method = request.GET.get("interval", "bootstrap")
    result, error = None, ""
    if treatment and baseline:
        try:
            if method not in stats.METHODS:
                raise ValueError("interval must be bootstrap or t")
            result = tables.compare(tables.parse_side(treatment), tables.parse_side(baseline), metric, method=method)
            if not (result["treatment"]["n"] and result["baseline"]["n"]):
                error = f"No end-of-run rows with a seed for one side on {metric}."
        except ValueError as exc:
            error = str(exc)
            result = None
    context = {
        "section": "benchmarks",
        "options": options,
        "metrics": metrics,
        "treatment": treatment,
        "baseline": baseline,
        "metric": metric,
        "method": method,
        "result": result,
        "error": error,
        "fmt": stats.format_figure,
    }
    if result:
        context["interval_label"] = stats.interval_label(result["ratio"]["n"], method)
        context["seed_rows"] = _seed_rows(result)
        context["plot"] = tables.ratio_plot(result)
    return render(request, "benchmarks/compare.html", context)


def _seed_rows(result: dict) -> list[dict]:
    seeds = sorted({*result["treatment"]["per_seed"], *result["baseline"]["per_seed"]}, key=int)
    return [
        {
            "seed": s,
            "treatment": result["treatment"]["per_seed"].get(s),
            "baseline": result["baseline"]["per_seed"].get(s),
            "ratio": result["ratio"]["per_seed"].get(s),
        }
        for s in seeds
    ]


@csrf_exempt  # CSRF is checked below, after the size-limiting upload handler is in place
@staff_member_required
def uploads(request):
    """Staff upload page: the same service as the API; ingest runs on a worker and this page polls it."""
    request.upload_handlers = [SizeLimitedUploadHandler(request)]
    return _uploads(request)


@csrf_protect
def _uploads(request):
    if request.method == "POST":
        if request.POST.get("held"):
            paired, fmt = _held_batch(request)
            if paired is None:
                return redirect("benchmarks:uploads")
        else:
            files = request.FILES.getlist("file")
            oversize = getattr(request, "_benchmarks_oversize", [])
            hints = [h.strip() for h in request.POST.get("paths", "").splitlines() if h.strip()]
            fmt = request.POST.get("format", "")
            try:
                paired = validate_upload_batch(files, hints, fmt, oversize)
            except UploadRefused as exc:
                messages.error(request, exc.message)
                return redirect("benchmarks:uploads")
            # Rows for the programme's own experiments change its record: ask first, naming the tables.
            changed = upload_review.programme_tables_changed(upload_review.experiments_in(paired, fmt))
            if changed:
                token = upload_review.hold(paired, fmt, request.user.pk)
                files = [hint for hint, _, _ in paired]
                context = {"section": "benchmarks", "tables": changed, "token": token, "files": files}
                return render(request, "benchmarks/upload_confirm.html", context)
        _queue(request, paired, fmt)
        return redirect("benchmarks:uploads")
    recent = SourceFile.objects.select_related("uploader").order_by("-pk")[:50]
    context = {
        "section": "benchmarks",
        "recent": recent,
        "formats": FORMATS,
        "limit": settings.UPLOAD_MAX_BYTES,
        "pending": [s.pk for s in recent if not s.is_finished],
    }
    return render(request, "benchmarks/uploads.html", context)
