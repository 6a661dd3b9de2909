"""JSON API of the experiments: list, detail (figures and verdict), edits until launch, launch and cancel."""

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import permissions, status
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.api import ApiError

from . import amendments, services
from .criterion import CriterionError
from .models import Experiment
from .spec import SpecError


class StaffWrites(permissions.BasePermission):
    """Anyone may read; only staff may edit, launch or cancel."""

    def has_permission(self, request, view):
        if request.method in permissions.SAFE_METHODS:
            return True
        return bool(request.user and request.user.is_authenticated and request.user.is_staff)


def _bad(exc: SpecError | CriterionError) -> ApiError:
    param = exc.field if isinstance(exc, SpecError) else f"criterion.{exc.path}".rstrip(".")
    return ApiError(str(exc), status_code=400, param=param, code="invalid_value")


class ExperimentListView(APIView):
    """`GET /api/experiments/`: every experiment with its registration hash, arms, seeds and verdict."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(operation_id="api_experiments_list", responses=OpenApiTypes.OBJECT)
    def get(self, request):
        items = [services.experiment_summary(e) for e in Experiment.objects.select_related("predecessor")]
        return Response({"count": len(items), "results": items})


class ExperimentDetailView(APIView):
    """`GET /api/experiments/<slug>/`: the registration, the runs' progress, per-arm figures and the verdict.
    `PATCH` (staff): edit the title, notes or, until launch, the registered fields; 409 once launched."""

    permission_classes = [StaffWrites]

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request, slug: str):
        return Response(services.experiment_detail(get_object_or_404(Experiment, slug=slug)))

    @extend_schema(request=OpenApiTypes.OBJECT, responses={200: OpenApiTypes.OBJECT, 409: OpenApiTypes.OBJECT})
    def patch(self, request, slug: str):
        experiment = get_object_or_404(Experiment, slug=slug)
        if not isinstance(request.data, dict):
            raise ApiError("The body must be a JSON object of the fields to change.", param="body")
        try:
            experiment = services.update_experiment(experiment, dict(request.data))
        except services.Frozen as exc:
            raise ApiError(str(exc), status_code=409, param=exc.fields[0], code="experiment_frozen")
        except (SpecError, CriterionError) as exc:
            raise _bad(exc)
        return Response(services.experiment_detail(experiment))


class ExperimentRegistrationView(APIView):
    """`GET /api/experiments/<slug>/registration/`: the registration record, word for word as registered, with its
    sha256 recomputed on the request, and the reader's rewording (if any) with its own date and sha256."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request, slug: str):
        experiment = get_object_or_404(Experiment, slug=slug)
        return Response(amendments.registration_record(experiment, services.registration_intact(experiment)))


class ExperimentRunsView(APIView):
    """`GET /api/experiments/<slug>/runs/`: the runs' progress. `POST` (staff): launch, one training run per arm
    and seed on the `train` queue; launching again queues nothing new (200 instead of 202)."""

    permission_classes = [StaffWrites]

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request, slug: str):
        experiment = get_object_or_404(Experiment, slug=slug)
        return Response({"runs": [services.run_summary(r) for r in experiment.runs.all()]})

    @extend_schema(request=None, responses={202: OpenApiTypes.OBJECT, 200: OpenApiTypes.OBJECT})
    def post(self, request, slug: str):
        experiment = get_object_or_404(Experiment, slug=slug)
        runs, queued = services.launch(experiment)
        body = {"queued": queued, "runs": [services.run_summary(r) for r in runs]}
        return Response(body, status=status.HTTP_202_ACCEPTED if queued else status.HTTP_200_OK)


class ExperimentCancelView(APIView):
    """`POST /api/experiments/<slug>/runs/cancel/` (staff): flag every unfinished run to stop."""

    permission_classes = [StaffWrites]

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    def post(self, request, slug: str):
        experiment = get_object_or_404(Experiment, slug=slug)
        flagged = services.cancel(experiment.runs.all())
        return Response({"cancelled": flagged, "runs": [services.run_summary(r) for r in experiment.runs.all()]})
