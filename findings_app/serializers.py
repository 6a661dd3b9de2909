"""JSON shapes of the findings API: a light row for the list, everything for one finding."""

from django.urls import reverse
from rest_framework import serializers

from .models import Figure, Finding, FindingLink, Reference
from .rendering import render_markdown


class FigureSerializer(serializers.ModelSerializer):
    interval = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()

    class Meta:
        model = Figure
        fields = ["name", "value", "context", "number", "interval", "qualifier", "unit", "url"]

    def get_interval(self, figure) -> dict | None:
        if figure.interval_low is None:
            return None
        return {"low": figure.interval_low, "high": figure.interval_high, "kind": figure.interval_kind}

    def get_url(self, figure) -> str:
        return figure.get_absolute_url()


class ReferenceSerializer(serializers.ModelSerializer):
    runs_url = serializers.CharField(read_only=True)

    class Meta:
        model = Reference
        fields = ["kind", "code", "note", "recorded_as", "runs_url"]


class LinkSerializer(serializers.ModelSerializer):
    code = serializers.CharField(source="target.code")
    url = serializers.CharField(source="target.get_absolute_url")

    class Meta:
        model = FindingLink
        fields = ["kind", "code", "url"]


class FindingListSerializer(serializers.ModelSerializer):
    url = serializers.CharField(source="get_absolute_url", read_only=True)
    api_url = serializers.SerializerMethodField()
    experiments = serializers.SerializerMethodField()

    class Meta:
        model = Finding
        fields = [
            "code", "url", "api_url", "date", "date_basis", "status", "status_raw", "review", "tarka_verdict",
            "theme", "title", "summary", "experiments",
        ]  # fmt: skip

    def get_api_url(self, finding) -> str:
        return reverse("findings-api:detail", args=[finding.code])

    def get_experiments(self, finding) -> list[str]:
        return [ref.code for ref in finding.experiment_chips() if ref.code]


class FindingDetailSerializer(FindingListSerializer):
    body_html = serializers.SerializerMethodField()
    figures = FigureSerializer(many=True, read_only=True)
    references = ReferenceSerializer(many=True, read_only=True)
    links = LinkSerializer(many=True, read_only=True)

    class Meta(FindingListSerializer.Meta):
        fields = [
            *FindingListSerializer.Meta.fields, "verdict_note", "theme_note", "body", "body_html", "figures",
            "references", "links",
        ]  # fmt: skip

    def get_body_html(self, finding) -> str:
        return render_markdown(finding.body)
