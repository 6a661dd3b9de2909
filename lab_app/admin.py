"""Admin for lab_app: lab jobs as an ops console (status, solver, game; re-run action)."""

from django.contrib import admin, messages
from django.db import transaction

from .models import LabRun


@admin.register(LabRun)
class LabRunAdmin(admin.ModelAdmin):
    list_display = ("id", "solver", "kind", "game_name", "status", "progress", "created_at", "finished_at")
    list_filter = ("status", "solver", "kind")
    search_fields = ("game_name", "error")
    readonly_fields = (
        "created_at", "started_at", "finished_at", "progress", "progress_message", "result", "requeue_count",
        "requeued_at",
    )  # fmt: skip
    actions = ["rerun"]

    @admin.action(description="Re-run the selected lab jobs")
    def rerun(self, request, queryset):
        from .tasks import run_lab_job

        for run in queryset:
            LabRun.objects.filter(pk=run.pk).update(
                status="queued", progress=0, error="", result=None, requeue_count=0, requeued_at=None
            )
            transaction.on_commit(lambda pk=run.pk: run_lab_job.delay(pk))
        messages.success(request, f"Queued {queryset.count()} lab job(s) again.")
