"""Admin as the ops console: uploads with re-ingest, runs, arms, rows and the declared tables."""

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.utils.html import format_html

from portal.models import JobStatus
from results.models import Arm, ResultRow, Run, SourceFile

from .models import Comparison
from .parsers import IngestError
from .parsers.registry import FORMATS
from .tasks import ingest_upload
from .uploads import combined_sha, read_limited


@admin.register(SourceFile)
class SourceFileAdmin(admin.ModelAdmin):
    list_display = ["id", "path_hint", "detected_format", "status", "rows_created", "uploader", "created_at"]
    list_filter = ["status", "detected_format", "requested_format"]
    search_fields = ["path_hint", "original_name", "sha256"]
    readonly_fields = ["sha256", "size_bytes", "detected_format", "rows_created", "rows_seen", "errors", "summary",
                       "error", "status", "progress", "started_at", "finished_at", "duplicate_of",
                       "requeue_count", "requeued_at"]  # fmt: skip
    actions = ["reingest"]
    add_fields = ["file", "companion", "path_hint", "requested_format"]

    def get_fields(self, request, obj=None):
        return self.add_fields if obj is None else super().get_fields(request, obj)

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else self.readonly_fields

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        if obj is None:
            form.base_fields["file"].required = True  # an upload row with no file would have nothing to ingest
            form.base_fields["requested_format"] = forms.ChoiceField(
                choices=[("", "Detect from the file"), *FORMATS.items()], required=False, label="Requested format"
            )
        return form

    def save_model(self, request, obj, form, change):
        """Adding a file here is an upload: hash it, remember who sent it, and queue the same ingest task."""
        if not change and obj.file:
            try:
                data = read_limited(obj.file)
            except IngestError as exc:
                self.message_user(request, exc.message, messages.ERROR)
                return
            companion = None
            if obj.companion:
                companion = read_limited(obj.companion)
                obj.companion.seek(0)
            obj.file.seek(0)
            obj.sha256 = combined_sha(data, companion)
            obj.size_bytes = len(data)
            obj.original_name = obj.file.name.rsplit("/", 1)[-1][:255]
            obj.path_hint = obj.path_hint or obj.original_name
            obj.uploader = request.user
        super().save_model(request, obj, form, change)
        if not change and obj.file:
            transaction.on_commit(lambda pk=obj.pk: ingest_upload.delay(pk))
            self.message_user(request, f"Upload #{obj.pk} queued for ingest.", messages.SUCCESS)

    @admin.action(description="Re-ingest the selected uploads (idempotent: existing rows are kept)")
    def reingest(self, request, queryset):
        count = 0
        for source in queryset.exclude(file=""):
            SourceFile.objects.filter(pk=source.pk).update(
                status=JobStatus.QUEUED, error="", errors=[], requeue_count=0, requeued_at=None
            )
            transaction.on_commit(lambda pk=source.pk: ingest_upload.delay(pk))
            count += 1
        self.message_user(request, f"{count} upload(s) queued for ingest.", messages.SUCCESS)


class ArmInline(admin.TabularInline):
    model = Arm
    extra = 0
    fields = ["label", "model_family", "model_name", "num_params"]
    show_change_link = True


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["run_id", "experiment", "seed", "seed_inferred", "config_hash_short", "git_commit", "page"]
    list_filter = ["experiment", "seed_inferred"]
    search_fields = ["run_id", "config_hash", "git_commit"]
    inlines = [ArmInline]
    raw_id_fields = ["source_file"]

    @admin.display(description="config hash")
    def config_hash_short(self, obj):
        return obj.config_hash[:12]

    @admin.display(description="page")
    def page(self, obj):
        return format_html('<a href="/benchmarks/runs/{}/">view</a>', obj.run_id)


@admin.register(Arm)
class ArmAdmin(admin.ModelAdmin):
    list_display = ["__str__", "label", "model_family", "model_name", "num_params"]
    list_filter = ["model_family", "label"]
    search_fields = ["run__run_id", "label", "model_name"]
    raw_id_fields = ["run"]


@admin.register(ResultRow)
class ResultRowAdmin(admin.ModelAdmin):
    list_display = ["experiment", "arm_label", "seed", "metric", "value", "unit", "step", "condition_key"]
    list_filter = ["metric", "experiment"]
    search_fields = ["experiment", "arm_label", "metric", "arm__run__run_id"]
    raw_id_fields = ["arm", "source_file"]
    show_full_result_count = False


@admin.register(Comparison)
class ComparisonAdmin(admin.ModelAdmin):
    list_display = ["slug", "title", "kind", "treatment", "baseline", "metric", "order", "page"]
    list_filter = ["kind"]
    search_fields = ["slug", "title"]

    @admin.display(description="page")
    def page(self, obj):
        return format_html('<a href="/benchmarks/{}/">view</a>', obj.slug)
