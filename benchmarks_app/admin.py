"""Admin as the ops console: uploads with re-ingest, runs, arms, rows and the declared tables."""

from django.contrib import admin, messages
from django.db import transaction
from django.utils.html import format_html

from portal.models import JobStatus

from .models import Arm, Comparison, ResultRow, Run, SourceFile
from .tasks import ingest_upload


@admin.register(SourceFile)
class SourceFileAdmin(admin.ModelAdmin):
    list_display = ["id", "path_hint", "detected_format", "status", "rows_created", "uploader", "created_at"]
    list_filter = ["status", "detected_format", "requested_format"]
    search_fields = ["path_hint", "original_name", "sha256"]
    readonly_fields = ["sha256", "size_bytes", "detected_format", "rows_created", "rows_seen", "errors", "summary",
                       "error", "status", "progress", "started_at", "finished_at", "duplicate_of"]  # fmt: skip
    actions = ["reingest"]

    @admin.action(description="Re-ingest the selected uploads (idempotent: existing rows are kept)")
    def reingest(self, request, queryset):
        count = 0
        for source in queryset.exclude(file=""):
            SourceFile.objects.filter(pk=source.pk).update(status=JobStatus.QUEUED, error="", errors=[])
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
