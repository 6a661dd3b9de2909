"""Read-only JSON API of the council record: `GET /api/council/` and `GET /api/council/questions/`."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.api import ApiError

from . import services
from .models import DOMAIN_GENERAL, DOMAIN_MATH, SampleQuestion, Seed
from .serializers import BaselineSerializer, PlayerSerializer, QuestionSerializer, SummarySerializer


class ReadOnly(BasePermission):
    """The record is reference data: everyone may read it, nobody may write it through the API (use the admin)."""

    message = "The council record is read-only; it is edited in the admin."

    def has_permission(self, request, view):
        return request.method in SAFE_METHODS


def summary_payload() -> dict:
    data = services.summary()
    record = data["record"]
    head = data["headline"]

    def arm(obj):
        return BaselineSerializer(obj).data if obj else None

    seeds = data["seed_table"]["seeds"]
    return {
        "record": {
            "title": record.title,
            "source": record.source,
            "note": record.note,
            "baselines_note": record.baselines_note,
            "baselines_n": record.baselines_n,
            "findings": record.findings,
        }
        if record
        else {},
        "headline": {
            "council": arm(head["council"]),
            "baseline": arm(head["baseline"]),
            "self_consistency_k5": arm(head["sc5"]),
            "capacity_matched_7b": arm(head["big"]),
            "margin_points": head["margin_points"],
            "designated_single": data["designated_single"].name if data["designated_single"] else None,
            "seed_margins": data["seed_margins"],
        },
        "baselines": [BaselineSerializer(b["arm"]).data for b in data["baselines"]],
        "per_seed": [
            {
                "key": r["key"],
                "label": r["label"],
                "kind": r["kind"],
                "values": {str(s): v for s, v in zip(seeds, r["values"], strict=True)},
                "mean": r["mean"],
            }
            for r in data["seed_table"]["rows"]
        ],
        "per_domain": [
            {
                "key": r["key"],
                "domain": d["domain"],
                "values": {str(s): v for s, v in zip(seeds, d["values"], strict=True)},
                "mean": d["mean"],
            }
            for r in data["domain_table"]["rows"]
            for d in r["domains"]
        ],
        "anchored_confirmation": [
            {
                "seed": a.seed.seed,
                "mechanism": a.mechanism,
                "router": a.router,
                "fallback_router": a.fallback_router,
                "margin_vs_plain": a.margin_vs_plain,
                "margin_vs_fallback": a.margin_vs_fallback,
                "paired_vs_plain": {"wins": a.paired_wins, "losses": a.paired_losses, "z": a.paired_z},
                "decomposition": a.decomposition,
                "per_domain": {
                    "math": {"mechanism": a.math_mechanism, "router": a.math_router},
                    "general": {"mechanism": a.general_mechanism, "router": a.general_router},
                },
            }
            for a in data["anchored"]["rows"]
        ],
        "router": {r.domain: r.player.name for r in data["router"]},
        "players": PlayerSerializer(data["players"], many=True).data,
        "checks": [
            {"label": c["label"], "recorded": c["recorded"], "derived": c["derived"], "holds": c["ok"]}
            for c in data["checks"]
        ],
    }


class CouncilSummaryView(APIView):
    permission_classes = [ReadOnly]

    @extend_schema(responses=SummarySerializer, summary="The council record: headline, baselines, per-seed accuracy")
    def get(self, request):
        return Response(summary_payload())


class CouncilQuestionsView(generics.ListAPIView):
    permission_classes = [ReadOnly]
    serializer_class = QuestionSerializer

    @extend_schema(
        summary="The recorded sample questions with each rule's pick and each player's correctness",
        parameters=[
            OpenApiParameter("seed", OpenApiTypes.INT, description="Only this seed (45, 46 or 47)."),
            OpenApiParameter("domain", OpenApiTypes.STR, enum=[DOMAIN_MATH, DOMAIN_GENERAL]),
        ],
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        qs = SampleQuestion.objects.with_outcomes()
        seed = self.request.query_params.get("seed", "")
        domain = self.request.query_params.get("domain", "")
        if seed:
            if not seed.isdigit() or not Seed.objects.filter(seed=int(seed)).exists():
                known = ", ".join(str(s) for s in Seed.objects.values_list("seed", flat=True))
                raise ApiError(f"Unknown seed {seed!r}; the record has seeds {known}.", param="seed")
            qs = qs.filter(seed__seed=int(seed))
        if domain:
            if domain not in (DOMAIN_MATH, DOMAIN_GENERAL):
                raise ApiError(f"Unknown domain {domain!r}; use 'math' or 'general'.", param="domain")
            qs = qs.filter(domain=domain)
        return qs
