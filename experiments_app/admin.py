"""Admin of the experiments: register and edit them (read-only once launched), launch them, cancel their runs."""

from django import forms
from django.contrib import admin, messages

from . import amendments, services
from .criterion import CriterionError
from .models import FROZEN_FIELDS, Experiment, TrainingRun
from .spec import SpecError


class ExperimentForm(forms.ModelForm):
    """The registered fields go through the same validation as the API (services.clean_registration)."""

    class Meta:
        model = Experiment
        fields = [
            *("slug", "title", "hypothesis", "arms", "seeds", "evaluation", "criterion", "predecessor"),
            *("notes", "summary"),
        ]

    def clean(self):
        data = super().clean()
        if self.errors or (self.instance.pk and self.instance.is_frozen):
            return data
        try:
            clean = services.clean_registration({f: data.get(f) for f in FROZEN_FIELDS})
        except SpecError as exc:
            field = exc.field.split(".")[0].split("[")[0]
            raise forms.ValidationError({field if field in self.fields else None: str(exc)})
        except CriterionError as exc:
            raise forms.ValidationError({"criterion": str(exc)})
        data.update(clean)
        return data

    def save(self, commit=True):
        instance = super().save(commit=False)
        services._rehash(instance)
        amendments.settle(instance, self.initial.get("summary") or "")
        if commit:
            instance.save()
        return instance


class TrainingRunInline(admin.TabularInline):
    model = TrainingRun
    extra = 0
    can_delete = False
    fields = [
        "arm_label",
        "seed",
        "status",
        "phase",
        "step",
        "planned_steps",
        "loss",
        "eta_seconds",
        "progress_message",
    ]
    readonly_fields = fields
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Experiment)
class ExperimentAdmin(admin.ModelAdmin):
    form = ExperimentForm
    list_display = ["slug", "title", "registered_at", "launched_at", "predecessor", "verdict"]
    search_fields = ["slug", "title", "hypothesis"]
    readonly_fields = ["registration_hash", "launched_at", "amended_at", "amendment_hash", "verdict"]
    inlines = [TrainingRunInline]
    actions = ["launch_experiments", "cancel_experiments"]

    def get_inlines(self, request, obj=None):
        return self.inlines if obj is not None and obj.is_frozen else []  # runs exist once it is launched

    def get_readonly_fields(self, request, obj=None):
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None and obj.is_frozen:
            fields += ["slug", *FROZEN_FIELDS, "predecessor", "registered_at"]
        return fields

    @admin.display(description="verdict")
    def verdict(self, obj):
        return services.judged_verdict(obj).verdict if obj.pk else "–"

    @admin.action(description="Launch: queue one training run per arm and seed (idempotent)")
    def launch_experiments(self, request, queryset):
        for experiment in queryset:
            runs, queued = services.launch(experiment)
            self.message_user(request, f"{experiment.slug}: {queued} runs queued, {len(runs)} in all.")

    @admin.action(description="Cancel every unfinished run")
    def cancel_experiments(self, request, queryset):
        flagged = sum(services.cancel(e.runs.all()) for e in queryset)
        self.message_user(request, f"{flagged} runs flagged to stop.", messages.WARNING)


@admin.register(TrainingRun)
class TrainingRunAdmin(admin.ModelAdmin):
    list_display = [
        "__str__",
        "status",
        "phase",
        "step",
        "planned_steps",
        "loss",
        "eta_seconds",
        "cancel_requested",
        "finished_at",
    ]
    list_filter = ["status", "phase", "cancel_requested", "experiment"]
    search_fields = ["experiment__slug", "arm_label"]
    readonly_fields = [f.name for f in TrainingRun._meta.fields]
    actions = ["cancel_runs", "retry_runs"]

    def has_add_permission(self, request):
        return False

    @admin.action(description="Cancel the selected runs")
    def cancel_runs(self, request, queryset):
        self.message_user(request, f"{services.cancel(queryset)} runs flagged to stop.", messages.WARNING)

    @admin.action(description="Run again from the saved state (failed or cancelled runs)")
    def retry_runs(self, request, queryset):
        self.message_user(request, f"{services.retry(queryset)} runs queued again.")
