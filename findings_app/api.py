"""The findings API: GET /api/findings/ (the timeline's filters, paginated) and GET /api/findings/<code>/."""

from django.db.models import Prefetch
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, permissions

from portal.api import ApiError

from .forms import FILTER_FIELDS, FindingFilterForm
from .models import Finding, Reference, canonical_code
from .serializers import FindingDetailSerializer, FindingListSerializer

FILTER_PARAMETERS = [
    OpenApiParameter(
        name,
        OpenApiTypes.STR,
        description=str(field.help_text or field.label or name),
        enum=[value for value, _ in field.choices if value] if hasattr(field, "choices") else None,
    )
    for name, field in ((name, FindingFilterForm.base_fields[name]) for name in FILTER_FIELDS)
]


class FindingListView(generics.ListAPIView):
    """The findings in timeline order, filtered like the /findings/ page."""

    serializer_class = FindingListSerializer
    permission_classes = [permissions.AllowAny]

    @extend_schema(parameters=FILTER_PARAMETERS)
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        form = FindingFilterForm(self.request.query_params)
        if not form.is_valid():
            field, errors = next(iter(form.errors.items()))
            raise ApiError(f"{field}: {errors[0]}", param=field)
        experiments = Reference.objects.filter(kind=Reference.Kind.EXPERIMENT).order_by("position")
        return (
            Finding.objects.filtered(**form.filters())
            .timeline()
            .prefetch_related(Prefetch("references", queryset=experiments, to_attr="experiment_refs"))
        )


class FindingDetailView(generics.RetrieveAPIView):
    """One finding with its body, every figure as recorded, its links and its provenance."""

    serializer_class = FindingDetailSerializer
    permission_classes = [permissions.AllowAny]
    lookup_field = "code"
    queryset = Finding.objects.prefetch_related("figures", "references", "links__target")

    def get_object(self):
        code = canonical_code(self.kwargs["code"])
        if code is None:
            message = f"No finding is called {self.kwargs['code']!r}."
            raise ApiError(message, status_code=404, param="code", code="not_found")
        self.kwargs["code"] = code
        return super().get_object()
