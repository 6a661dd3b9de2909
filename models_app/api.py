"""JSON API of the model registry: list models (anyone), upload a checkpoint (staff only), see an evaluation."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import permissions, serializers
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from eqlm.limits import DEPTH_MIN, SOLVERS
from portal.api import ApiError

from .convergence import (
    COMPARED_STARTS,
    DEFAULT_OPTIONS,
    EVALUATION_MAX_DEPTH,
    MAX_WINDOWS,
    TEXTS,
    queue_convergence_evaluation,
)
from .imports import check_declared_length
from .models import EvaluationRun, ModelImport, RegisteredModel
from .programme_eval import PROTOCOLS, queue_protocol_evaluation
from .services import (
    DEFAULT_PAIR_LIMIT,
    RegistryError,
    parse_depths,
    parse_paradigms,
    queue_evaluation,
    register_upload,
)


class IsStaffForWrites(permissions.BasePermission):
    def has_permission(self, request, view):
        return request.method in permissions.SAFE_METHODS or bool(request.user and request.user.is_staff)


class EvaluationSerializer(serializers.ModelSerializer):
    class Meta:
        model = EvaluationRun
        fields = [
            "id",
            "kind",
            "status",
            "progress",
            "progress_message",
            "error",
            "depths",
            "paradigms",
            "pair_limit",
            "options",
            "device",
            "results",
            "rows_written",
            "created_at",
            "started_at",
            "finished_at",
        ]


class RegisteredModelSerializer(serializers.ModelSerializer):
    latest_evaluation = serializers.SerializerMethodField()

    class Meta:
        model = RegisteredModel
        fields = [
            "slug",
            "name",
            "kind",
            "model_class",
            "sha256",
            "size_bytes",
            "num_params",
            "config",
            "provenance",
            "metrics",
            "created_at",
            "latest_evaluation",
        ]

    def get_latest_evaluation(self, obj) -> dict | None:
        run = obj.evaluations.order_by("-created_at").first()
        return EvaluationSerializer(run).data if run else None


class ModelImportSerializer(serializers.ModelSerializer):
    model = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = ModelImport
        fields = ["id", "model", "status", "progress", "progress_message", "error", "facts", "created_at",
                  "started_at", "finished_at"]  # fmt: skip


@extend_schema_serializer(component_name="ModelUpload")  # benchmarks_app has an "Upload" component too
class UploadSerializer(serializers.Serializer):
    checkpoint = serializers.FileField(
        help_text="a torch checkpoint dict, loaded with weights_only=True: the portal's own format, or the "
        "programme's (config_dict, model_class, state_dict); at most CHECKPOINT_MAX_BYTES (1 GiB by default)"
    )
    name = serializers.CharField(max_length=120)
    card = serializers.FileField(required=False, help_text="a Markdown model card shown on /models/<slug>/")
    declares = serializers.CharField(
        required=False, allow_blank=True, default="", help_text="the published run it is: EXPERIMENT:ARM:SEED"
    )
    depths = serializers.CharField(required=False, default="1,2,4,8,12")
    paradigms = serializers.CharField(required=False, allow_blank=True, default="")
    limit = serializers.IntegerField(required=False, min_value=1, max_value=1000, default=DEFAULT_PAIR_LIMIT)


class ModelListView(APIView):
    """GET: registered models with their latest evaluation. POST (staff): upload a checkpoint and queue BLiMP."""

    permission_classes = [IsStaffForWrites]
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(responses=RegisteredModelSerializer(many=True), summary="List registered models")
    def get(self, request):
        return Response(RegisteredModelSerializer(RegisteredModel.objects.all(), many=True).data)

    @extend_schema(
        request={"multipart/form-data": UploadSerializer},
        responses={201: RegisteredModelSerializer},
        summary="Upload a checkpoint (staff)",
    )
    def post(self, request):
        try:
            check_declared_length(request.META.get("CONTENT_LENGTH"))  # before the body is read or spooled
            data = UploadSerializer(data=request.data)
            data.is_valid(raise_exception=True)
            v = data.validated_data
            model, job = register_upload(
                v["checkpoint"], v["name"], request.user, v["depths"], v["paradigms"], v["limit"],
                card=v.get("card"), declares=v["declares"],
            )  # fmt: skip
        except RegistryError as exc:
            raise ApiError(str(exc), status_code=exc.status_code, param=exc.param, code=exc.code)
        body = RegisteredModelSerializer(model).data
        if isinstance(job, ModelImport):
            job.refresh_from_db()
            body["import_id"] = job.pk
            body["import"] = ModelImportSerializer(job).data
        else:
            body["evaluation_id"] = job.pk
        return Response(body, status=201)


class QueueEvaluationSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=EvaluationRun.Kind.choices, default=EvaluationRun.Kind.CONVERGENCE)
    # quality and convergence by depth (defaults: models_app/convergence.py DEFAULT_OPTIONS)
    solvers = serializers.ListField(child=serializers.ChoiceField(choices=SOLVERS), required=False, min_length=1)
    max_depth = serializers.IntegerField(required=False, min_value=DEPTH_MIN, max_value=EVALUATION_MAX_DEPTH)
    tolerances = serializers.ListField(
        child=serializers.FloatField(min_value=1e-6, max_value=0.5), required=False, min_length=1, max_length=8
    )
    cap = serializers.IntegerField(required=False, min_value=DEPTH_MIN, max_value=EVALUATION_MAX_DEPTH)
    windows = serializers.IntegerField(required=False, min_value=1, max_value=MAX_WINDOWS)
    text = serializers.ChoiceField(choices=TEXTS, required=False)
    starts = serializers.ListField(child=serializers.ChoiceField(choices=COMPARED_STARTS), required=False)
    # BLiMP: by depth (a portal model), or by a protocol (a programme checkpoint: "programme" or "full")
    protocol = serializers.ChoiceField(choices=PROTOCOLS, required=False)
    depths = serializers.CharField(required=False, default="1,2,4,8,12")
    paradigms = serializers.CharField(required=False, allow_blank=True, default="")
    limit = serializers.IntegerField(required=False, min_value=1, max_value=1000, default=DEFAULT_PAIR_LIMIT)


class QueueEvaluationView(APIView):
    """POST (staff): queue an evaluation of a registered model on the workers."""

    permission_classes = [permissions.IsAdminUser]

    @extend_schema(
        request=QueueEvaluationSerializer,
        responses={201: EvaluationSerializer},
        summary="Queue an evaluation of a model: quality and convergence by depth, or BLiMP by depth (staff)",
    )
    def post(self, request, slug: str):
        model = RegisteredModel.objects.filter(slug=slug).first()
        if model is None:
            raise ApiError("no such model", status_code=404, code="not_found", param="slug")
        data = QueueEvaluationSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        try:
            if v["kind"] == EvaluationRun.Kind.CONVERGENCE:
                options = {k: v[k] for k in DEFAULT_OPTIONS if k in v}
                run = queue_convergence_evaluation(model, options, request.user)
            elif v.get("protocol"):
                limit = request.data.get("limit") and v["limit"]
                run = queue_protocol_evaluation(model, v["protocol"], request.user, limit or None)
            else:
                run = queue_evaluation(
                    model, parse_depths(v["depths"]), parse_paradigms(v["paradigms"]), v["limit"], request.user
                )
        except RegistryError as exc:
            raise ApiError(str(exc), status_code=exc.status_code, param=exc.param, code=exc.code)
        return Response(EvaluationSerializer(run).data, status=201)


class EvaluationDetailView(APIView):
    permission_classes = [permissions.AllowAny]

    @extend_schema(responses=EvaluationSerializer, summary="One evaluation run (poll for progress)")
    def get(self, request, pk: int):
        run = EvaluationRun.objects.filter(pk=pk).first()
        if run is None:
            raise ApiError("no such evaluation", status_code=404, code="not_found")
        return Response(EvaluationSerializer(run).data)


class ModelImportDetailView(APIView):
    permission_classes = [permissions.AllowAny]

    @extend_schema(responses=ModelImportSerializer, summary="One model import (poll for its progress)")
    def get(self, request, pk: int):
        job = ModelImport.objects.select_related("model").filter(pk=pk).first()
        if job is None:
            raise ApiError("no such import", status_code=404, code="not_found")
        return Response(ModelImportSerializer(job).data)
