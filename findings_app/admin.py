"""The findings record in the admin: findings with inline figures, links and provenance, and a live preview."""

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.forms import Script
from django.http import JsonResponse
from django.urls import path
from django.utils.html import format_html
from django.views.decorators.http import require_POST

from .models import Figure, Finding, FindingLink, RecordNote, Reference
from .rendering import render_markdown

PREVIEW_MAX_CHARS = 100_000


class FigureInline(admin.TabularInline):
    model = Figure
    extra = 0
    fields = ["position", "name", "value", "context", "number", "interval_low", "interval_high", "unit"]
    readonly_fields = ["number", "interval_low", "interval_high", "unit"]


class FindingLinkInline(admin.TabularInline):
    model = FindingLink
    fk_name = "source"
    extra = 0
    fields = ["kind", "target", "position"]
    autocomplete_fields = ["target"]


class ReferenceInline(admin.TabularInline):
    model = Reference
    extra = 0
    fields = ["kind", "recorded_as", "code", "note", "position"]


class MarkdownPreviewMixin:
    """A staff-only endpoint that renders Markdown exactly as the public pages will (sanitised)."""

    class Media:
        css = {"all": ["css/findings.css"]}
        js = [Script("js/findings-admin.js", type="module")]

    def get_urls(self):
        info = self.model._meta.app_label, self.model._meta.model_name
        preview = self.admin_site.admin_view(require_POST(self.preview_view))
        return [path("preview/", preview, name="{}_{}_preview".format(*info)), *super().get_urls()]

    def preview_view(self, request):
        if not (self.has_change_permission(request) or self.has_add_permission(request)):
            raise PermissionDenied
        text = request.POST.get("text", "")[:PREVIEW_MAX_CHARS]
        return JsonResponse({"html": render_markdown(text)})


@admin.register(Finding)
class FindingAdmin(MarkdownPreviewMixin, admin.ModelAdmin):
    list_display = ["code", "title", "date", "status", "review", "theme", "figure_count"]
    list_display_links = ["code", "title"]
    list_filter = ["status", "review", "theme", "date"]
    search_fields = ["code", "title", "summary", "body", "figures__value", "references__recorded_as"]
    date_hierarchy = "date"
    ordering = ["date", "sequence"]
    readonly_fields = ["permalink", "updated_at"]
    inlines = [FigureInline, FindingLinkInline, ReferenceInline]
    fieldsets = [
        (None, {"fields": ["code", "permalink", "title", "summary", "body"]}),
        ("Status", {"fields": ["date", "date_basis", "status", "status_raw"]}),
        ("Reviewer", {"fields": ["review", "tarka_verdict", "verdict_note"]}),
        ("Theme", {"fields": ["theme", "theme_note", "updated_at"]}),
    ]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(n_figures=Count("figures"))

    @admin.display(description="figures", ordering="n_figures")
    def figure_count(self, finding):
        return finding.n_figures

    @admin.display(description="public page")
    def permalink(self, finding):
        if not finding.pk:
            return "—"
        return format_html('<a href="{0}">{0}</a>', finding.get_absolute_url())


@admin.register(RecordNote)
class RecordNoteAdmin(MarkdownPreviewMixin, admin.ModelAdmin):
    list_display = ["title", "slug", "position"]
    search_fields = ["title", "body"]
    prepopulated_fields = {"slug": ["title"]}
    filter_horizontal = ["findings"]


@admin.register(Figure)
class FigureAdmin(admin.ModelAdmin):
    list_display = ["finding", "name", "value", "number", "interval_low", "interval_high"]
    list_filter = ["finding__theme", "interval_kind"]
    search_fields = ["finding__code", "name", "value", "context"]
    readonly_fields = ["number", "interval_low", "interval_high", "interval_kind", "qualifier", "unit"]
    list_select_related = ["finding"]
