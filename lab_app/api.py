"""JSON API of the lab: synchronous solves and solver jobs (LabRun rows run by Celery)."""

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import permissions, status
from rest_framework.parsers import JSONParser
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.api import ApiError
from portal.throttle import JobAnonThrottle, JobUserThrottle

from . import services
from .models import LabRun
from .serializers import JobRequestSerializer, SolveRequestSerializer, check_job_request, check_numbers
from .solvers import SolverInputError, TimeLimitExceeded

# A 50x50 game with both matrices at full precision is about 130 KB of JSON.
LAB_MAX_BODY_BYTES = 256 * 1024

SOLVE_EXAMPLE = OpenApiExample(
    "QRE at λ = 100 on the biased RPS",
    value={"game": "biased_rps", "solver": "qre", "params": {"lambda": 100}},
    request_only=True,
)
JOB_EXAMPLE = OpenApiExample(
    "MMD sweep over τ",
    value={"game": "biased_rps", "solver": "mmd", "params": {"steps": 5000}, "sweep": {"tau": [0.05, 0.1, 0.2]}},
    request_only=True,
)


class LenientJSONParser(JSONParser):
    """Accepts NaN/Infinity literals so validation can name the field that holds them."""

    strict = False


def _input_error(exc: SolverInputError) -> ApiError:
    return ApiError(str(exc), status_code=400, param=exc.field, code="invalid_value")


class SolveView(APIView):
    """`POST /api/lab/solve`: answer a small problem now, in the same JSON shape the browser computes."""

    permission_classes = [permissions.AllowAny]
    parser_classes = [LenientJSONParser]
    max_body_bytes = LAB_MAX_BODY_BYTES

    @extend_schema(request=SolveRequestSerializer, responses=OpenApiTypes.OBJECT, examples=[SOLVE_EXAMPLE])
    def post(self, request):
        data = request.data  # parse errors (a body nested too deeply) are the handler's, not solver failures
        try:
            check_numbers(data)
            return Response(services.solve_now(data))
        except SolverInputError as exc:
            raise _input_error(exc)
        except TimeLimitExceeded:
            raise ApiError(
                f"This problem takes longer than {services.SYNC_TIME_LIMIT:g} s to solve synchronously; "
                "submit it as a job with POST /api/lab/jobs/.",
                code="too_slow_for_sync",
            )
        except (ArithmeticError, ValueError, RuntimeError) as exc:
            raise ApiError(f"The solver failed on this game: {exc}", param="game", code="solver_failed")


class JobListView(APIView):
    """`POST /api/lab/jobs/`: queue a sweep, a QRE path or an enumeration as a LabRun job."""

    permission_classes = [permissions.AllowAny]
    parser_classes = [LenientJSONParser]
    throttle_classes = [JobAnonThrottle, JobUserThrottle]
    max_body_bytes = LAB_MAX_BODY_BYTES

    @extend_schema(request=JobRequestSerializer, responses={201: OpenApiTypes.OBJECT}, examples=[JOB_EXAMPLE])
    def post(self, request):
        data = request.data
        try:
            check_job_request(data)
            run = services.create_job(data, owner=request.user)
        except SolverInputError as exc:
            raise _input_error(exc)
        run.refresh_from_db()
        return Response(services.job_json(run, request), status=status.HTTP_201_CREATED)


class JobDetailView(APIView):
    """`GET /api/lab/jobs/<id>/`: status, progress and (once done) the results."""

    permission_classes = [permissions.AllowAny]

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request, pk: int):
        run = get_object_or_404(LabRun, pk=pk)
        return Response(services.job_json(run, request))
