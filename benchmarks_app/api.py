"""JSON API for benchmarks: uploads (staff), live tables, compare, and the result rows themselves."""

import csv
import io

from django.conf import settings
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import permissions, serializers, status
from rest_framework.pagination import PageNumberPagination
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.api import ApiError
from results import stats
from results.experiment_names import resolve
from results.models import ResultRow, SourceFile

from . import tables
from .models import Comparison
from .parsers import FORMATS, IngestError
from .uploads import MAX_FILES, SizeLimitedUploadHandler, queue_uploads, validate_upload_batch


class UploadSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()
    duplicate_of = serializers.PrimaryKeyRelatedField(read_only=True)

    class Meta:
        model = SourceFile
        fields = ["id", "url", "status", "progress", "original_name", "path_hint", "requested_format",
                  "detected_format", "size_bytes", "sha256", "rows_created", "rows_seen", "summary", "error",
                  "errors", "duplicate_of", "created_at", "started_at", "finished_at"]  # fmt: skip

    def get_url(self, obj) -> str:
        return f"/api/benchmarks/uploads/{obj.pk}/"


class UploadResultSerializer(UploadSerializer):
    """One file of an upload batch: the row as it stands when the answer is sent, and what happened to it."""

    duplicate = serializers.BooleanField(help_text="identical bytes were uploaded before and did not fail")
    message = serializers.CharField()

    class Meta(UploadSerializer.Meta):
        fields = [*UploadSerializer.Meta.fields, "duplicate", "message"]


class UploadBatchSerializer(serializers.Serializer):
    uploads = UploadResultSerializer(many=True)


UPLOAD_MESSAGES = {
    "queued": "Queued for ingest.",
    "running": "Being ingested.",
    "done": "Ingested.",
    "failed": "The file was refused; see error and errors. Nothing was stored; fix it and upload it again.",
}


@extend_schema_field({"type": "string", "format": "binary"})
class UploadedFileField(serializers.FileField):
    """A file sent in the multipart body (the schema documents bytes, not a URL)."""


class UploadRequestSerializer(serializers.Serializer):
    file = serializers.ListField(child=UploadedFileField(), help_text="one or more result files")
    path = serializers.ListField(child=serializers.CharField(), required=False, help_text="path hint per file")
    format = serializers.ChoiceField(choices=list(FORMATS), required=False)


class UploadListView(APIView):
    """Staff upload result files (multipart: `file` repeated, optional `path` hint per file, optional `format`)."""

    permission_classes = [permissions.IsAdminUser]

    def initialize_request(self, request, *args, **kwargs):
        # Before anything reads the body: files over the limit are cut off while they stream in.
        request.upload_handlers = [SizeLimitedUploadHandler(request)]
        return super().initialize_request(request, *args, **kwargs)

    @extend_schema(request={"multipart/form-data": UploadRequestSerializer}, responses={202: UploadBatchSerializer})
    def post(self, request):
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
        if declared > settings.UPLOAD_MAX_BYTES * MAX_FILES + 1024 * 1024:  # refuse before the body is read
            raise ApiError(
                f"Request body of {declared:,} bytes is over the upload limit ({settings.UPLOAD_MAX_BYTES:,} bytes "
                "per file).",
                status_code=413,
                param="file",
                code="too_large",
            )
        files = request.FILES.getlist("file") or request.FILES.getlist("files")
        oversize = getattr(request._request, "_benchmarks_oversize", [])
        hints = request.data.getlist("path") if hasattr(request.data, "getlist") else []
        fmt = request.data.get("format", "") or ""
        paired = validate_upload_batch(files, hints, fmt, oversize)  # UploadRefused is an ApiError
        try:
            stored = queue_uploads(paired, fmt=fmt, uploader=request.user)
        except IngestError as exc:
            raise ApiError(exc.message, param="format")
        results = []
        for _hint, source, duplicate in stored:
            source.refresh_from_db()  # with eager tasks the ingest has already run: report where the row stands
            source.duplicate = duplicate
            source.message = (
                f"Identical bytes were already uploaded as #{source.pk} ({source.status}); nothing new to ingest."
                if duplicate
                else UPLOAD_MESSAGES.get(source.status, "")
            )
            results.append(UploadResultSerializer(source).data)
        return Response({"uploads": results}, status=status.HTTP_202_ACCEPTED)


class UploadDetailView(APIView):
    """Status of one upload: rows created, and each error with the JSON pointer or line where it happened."""

    permission_classes = [permissions.IsAdminUser]

    @extend_schema(responses=UploadSerializer)
    def get(self, request, pk: int):
        return Response(UploadSerializer(get_object_or_404(SourceFile, pk=pk)).data)


class TableListView(APIView):
    """Every declared table with its published-figure check counts."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(responses=OpenApiTypes.OBJECT, operation_id="api_benchmarks_tables_list")
    def get(self, request):
        items = []
        for comparison in Comparison.objects.all():
            table = tables.build_table(comparison)
            items.append(
                {
                    "slug": comparison.slug,
                    "title": comparison.title,
                    "kind": comparison.kind,
                    "url": f"/api/benchmarks/tables/{comparison.slug}/",
                    "page": f"/benchmarks/{comparison.slug}/",
                    "findings": table["findings"],
                    "empty": table["empty"],
                    "checks": table["counts"],
                }
            )
        return Response({"tables": items})


class TableDetailView(APIView):
    """One table computed live from the stored rows (with the rows behind it)."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request, slug: str):
        table = tables.build_table(get_object_or_404(Comparison, slug=slug))
        return Response(with_provenance_preview(table))


PROVENANCE_PREVIEW = 100


def with_provenance_preview(table: dict) -> dict:
    """The table with its first PROVENANCE_PREVIEW rows behind it, saying how many it shows and where the rest are."""
    rows = table["provenance"]
    shown = rows[:PROVENANCE_PREVIEW]
    return {
        **table,
        "provenance": shown,
        "provenance_count": {
            "shown": len(shown),
            "total": len(rows),
            "text": f"showing {len(shown)} of {len(rows)} rows",
            "all_rows_csv": f"/benchmarks/{table['slug']}/rows.csv",
        },
    }


def _side(request, name: str) -> tuple[str, str]:
    raw = request.query_params.get(name, "")
    try:
        return tables.parse_side(raw)
    except ValueError:
        raise ApiError(f"{name} must be <experiment>:<arm>, e.g. exp32:C1", param=name)


class CompareView(APIView):
    """Pair any treatment with any baseline by seed on one metric; per-seed means are computed in SQL."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(
        parameters=[
            OpenApiParameter("treatment", str, description="<experiment>:<arm>, e.g. exp32:C1", required=True),
            OpenApiParameter("baseline", str, description="<experiment>:<arm>, e.g. exp10_5090:A1", required=True),
            OpenApiParameter("metric", str, description="e.g. blimp_accuracy", required=True),
            OpenApiParameter("interval", str, enum=list(stats.METHODS), description="bootstrap (default) or t"),
            OpenApiParameter("resamples", int, description="bootstrap resamples, 100..100000 (default 10000)"),
        ],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request):
        treatment, baseline = _side(request, "treatment"), _side(request, "baseline")
        metric = request.query_params.get("metric", "")
        if not metric:
            raise ApiError("metric is required, e.g. blimp_accuracy", param="metric")
        method = request.query_params.get("interval", "bootstrap")
        if method not in stats.METHODS:
            raise ApiError(f"interval must be one of {', '.join(stats.METHODS)}", param="interval")
        try:
            resamples = int(request.query_params.get("resamples", stats.DEFAULT_RESAMPLES))
        except ValueError:
            raise ApiError("resamples must be an integer", param="resamples")
        if not 100 <= resamples <= 100_000:
            raise ApiError("resamples must be between 100 and 100000", param="resamples")
        result = tables.compare(treatment, baseline, metric, method=method, resamples=resamples)
        for name in ("treatment", "baseline"):
            if not result[name]["n"]:
                raise ApiError(
                    f"No rows for {result[name]['side']} on {metric} (with a seed).",
                    status_code=404,
                    param=name,
                    code="no_rows",
                )
        return Response(result)


class ResultPagination(PageNumberPagination):
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000


class ResultRowSerializer(serializers.ModelSerializer):
    run = serializers.CharField(source="arm.run.run_id")
    config_hash = serializers.CharField(source="arm.run.config_hash")
    git_commit = serializers.CharField(source="arm.run.git_commit")
    source = serializers.SerializerMethodField()

    class Meta:
        model = ResultRow
        fields = ["id", "run", "experiment", "arm_label", "seed", "metric", "value", "unit", "n", "step",
                  "condition", "config_hash", "git_commit", "source", "source_pointer"]  # fmt: skip

    def get_source(self, obj) -> str:
        return (obj.source_file.path_hint or obj.source_file.original_name) if obj.source_file else ""


FILTERS = {"arm": "arm_label", "metric": "metric", "run": "arm__run__run_id"}


def filter_results(params):
    qs = ResultRow.objects.select_related("arm__run", "source_file").order_by("id")
    for param, field in FILTERS.items():
        if params.get(param):
            qs = qs.filter(**{field: params[param]})
    if params.get("experiment"):  # the programme's name (exp10) also finds the rows stored as exp10_5090
        qs = qs.filter(experiment__in=resolve(params["experiment"]) or [params["experiment"]])
    if params.get("seed"):
        try:
            qs = qs.filter(seed=int(params["seed"]))
        except ValueError:
            raise ApiError("seed must be an integer", param="seed")
    if params.get("final") in ("1", "true"):
        qs = qs.filter(step__isnull=True)
    return qs


class ResultListView(APIView):
    """Stored result rows with provenance; filters experiment, arm, seed, metric, run, final=1; `?format=csv`."""

    permission_classes = [permissions.AllowAny]

    def perform_content_negotiation(self, request, force=False):
        # `?format=csv` is this view's own switch, not DRF's renderer override.
        renderer = JSONRenderer()
        return renderer, renderer.media_type

    @extend_schema(
        parameters=[
            OpenApiParameter(p, str) for p in ("experiment", "arm", "seed", "metric", "run", "final", "format")
        ],
        responses=ResultRowSerializer(many=True),
    )
    def get(self, request):
        qs = filter_results(request.query_params)
        if request.query_params.get("format") == "csv":
            return results_csv(qs)
        paginator = ResultPagination()
        page = paginator.paginate_queryset(qs, request, view=self)
        return paginator.get_paginated_response(ResultRowSerializer(page, many=True).data)


CSV_LIMIT = 200_000


def results_csv(qs) -> HttpResponse:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    columns = ["run", "experiment", "arm", "seed", "metric", "value", "unit", "n", "step", "condition",
               "config_hash", "git_commit", "source", "pointer"]  # fmt: skip
    writer.writerow(columns)
    for r in qs[:CSV_LIMIT]:
        writer.writerow([r.arm.run.run_id, r.experiment, r.arm_label, r.seed, r.metric, repr(r.value), r.unit, r.n,
                         r.step, r.condition_key, r.arm.run.config_hash, r.arm.run.git_commit,
                         (r.source_file.path_hint if r.source_file else ""), r.source_pointer])  # fmt: skip
    response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="results.csv"'
    return response
