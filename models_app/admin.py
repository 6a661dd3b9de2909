"""Admin of the model registry: registered models (upload a checkpoint), their evaluation runs and import jobs."""

from django import forms
from django.contrib import admin, messages
from django.http import HttpResponse

from eqlm.limits import DEPTH_MAX, DEPTH_MIN, SOLVERS

from .convergence import DEFAULT_WINDOWS, queue_convergence_evaluation
from .imports import check_declared_length
from .models import EvaluationRun, ModelImport, RegisteredModel
from .services import DEFAULT_DEPTHS, DEFAULT_PAIR_LIMIT, RegistryError, queue_evaluation, register_upload

SOLVER_NAMES = " and ".join(s.capitalize() for s in SOLVERS)  # Picard and Anderson


class UploadForm(forms.ModelForm):
    upload = forms.FileField(
        label="Checkpoint (.pt)",
        help_text="the portal's own format or the programme's (config_dict, model_class); validated with "
        "torch.load(weights_only=True); at most CHECKPOINT_MAX_BYTES",
    )
    card = forms.FileField(label="Model card (.md)", required=False, help_text="shown on the model's page")
    declares = forms.CharField(
        required=False, help_text="the published run it is, EXPERIMENT:ARM:SEED (e.g. exp13:B1:42)"
    )
    depths = forms.CharField(initial=",".join(map(str, DEFAULT_DEPTHS)))
    pair_limit = forms.IntegerField(initial=DEFAULT_PAIR_LIMIT, min_value=1, max_value=1000)

    class Meta:
        model = RegisteredModel
        fields = ["name", "notes"]

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        try:
            self.registered, self.run = register_upload(
                data["upload"],
                data["name"],
                getattr(self, "user", None),
                data["depths"],
                None,
                data["pair_limit"],
                card=data.get("card"),
                declares=data.get("declares"),
            )
        except RegistryError as exc:
            raise forms.ValidationError(str(exc))
        return data


@admin.register(RegisteredModel)
class RegisteredModelAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "kind", "model_class", "num_params", "size_bytes", "serving", "created_at"]
    list_filter = ["kind", "model_class"]
    search_fields = ["name", "slug", "sha256"]
    readonly_fields = [
        "slug",
        "kind",
        "model_class",
        "checkpoint",
        "checkpoint_path",
        "onnx_dir",
        "serving",
        "sha256",
        "size_bytes",
        "num_params",
        "config",
        "provenance",
        "metrics",
        "uploaded_by",
        "created_at",
    ]
    actions = [
        "queue_default_evaluation",
        "queue_programme_protocol",
        "queue_convergence_evaluation",
        "queue_onnx_export",
    ]

    @admin.action(description="Queue the programme's BLiMP protocol (5 paradigms x 200 pairs; programme checkpoints)")
    def queue_programme_protocol(self, request, queryset):
        from .programme_eval import queue_protocol_evaluation

        queued = 0
        for model in queryset:
            try:
                queue_protocol_evaluation(model, "programme", request.user)
                queued += 1
            except RegistryError as exc:
                self.message_user(request, f"{model.slug}: {exc}", level=messages.ERROR)
        self.message_user(request, f"Queued {queued} protocol evaluation(s).")

    @admin.action(description="Export to ONNX and serve it on /v1, the dial and the council")
    def queue_onnx_export(self, request, queryset):
        from .exports import queue_export

        for model in queryset:
            queue_export(model)
        self.message_user(request, f"Queued {queryset.count()} export(s).")

    @admin.display(description="served on /v1 and the dial")
    def serving(self, obj) -> str:
        """Whether this web process serves the model: loaded, not loaded (yet), failed (why), or not served."""
        from .serving import model_states

        state = next((s for s in model_states() if s["id"] == obj.slug), None)
        if state is None:
            return "not served (no ONNX export)"
        return f"{state['state']}: {state['error']}" if state.get("error") else state["state"]

    def get_form(self, request, obj=None, **kwargs):
        if obj is None:
            form = UploadForm
            form.user = request.user
            return form
        return super().get_form(request, obj, **kwargs)

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else self.readonly_fields

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["name", "notes", "upload", "card", "declares", "depths", "pair_limit"]
        return ["name", "notes", *self.readonly_fields]

    def add_view(self, request, form_url="", extra_context=None):
        """An upload over CHECKPOINT_MAX_BYTES is refused on its Content-Length, before its body is read."""
        if request.method == "POST":
            try:
                check_declared_length(request.META.get("CONTENT_LENGTH"))
            except RegistryError as exc:
                return HttpResponse(str(exc), status=exc.status_code, content_type="text/plain; charset=utf-8")
        return super().add_view(request, form_url, extra_context)

    def save_model(self, request, obj, form, change):
        if change:
            return super().save_model(request, obj, form, change)
        obj.pk = form.registered.pk  # the service already created the row and queued its evaluation or import
        obj.refresh_from_db()
        what = "import" if isinstance(form.run, ModelImport) else "evaluation"
        messages.info(request, f"Registered {obj.slug}; {what} #{form.run.pk} queued.")

    @admin.action(description="Queue a BLiMP evaluation (depths 1,2,4,8,12; 50 pairs per paradigm)")
    def queue_default_evaluation(self, request, queryset):
        for model in queryset:
            queue_evaluation(model, DEFAULT_DEPTHS, (), DEFAULT_PAIR_LIMIT, request.user)
        self.message_user(request, f"Queued {queryset.count()} evaluation(s).")

    @admin.action(
        description=f"Queue a quality-and-convergence evaluation (depths {DEPTH_MIN}-{DEPTH_MAX}, {SOLVER_NAMES}, "
        f"{DEFAULT_WINDOWS} held-out windows)"
    )
    def queue_convergence_evaluation(self, request, queryset):
        queued = 0
        for model in queryset:
            try:
                queue_convergence_evaluation(model, None, request.user)
                queued += 1
            except RegistryError as exc:
                self.message_user(request, f"{model.slug}: {exc}", level=messages.ERROR)
        self.message_user(request, f"Queued {queued} quality-and-convergence evaluation(s).")


@admin.register(EvaluationRun)
class EvaluationRunAdmin(admin.ModelAdmin):
    list_display = ["id", "model", "kind", "status", "progress", "pair_limit", "device", "rows_written", "created_at"]
    list_filter = ["kind", "status", "device"]
    search_fields = ["model__name", "model__slug"]
    readonly_fields = [
        "kind",
        "options",
        "status",
        "progress",
        "progress_message",
        "error",
        "created_at",
        "started_at",
        "finished_at",
        "device",
        "results",
        "rows_written",
        "requested_by",
        "requeue_count",
        "requeued_at",
    ]
    actions = ["rerun"]

    @admin.action(description="Run again (a new evaluation row with the same settings)")
    def rerun(self, request, queryset):
        for run in queryset:
            if run.kind == EvaluationRun.Kind.CONVERGENCE:
                queue_convergence_evaluation(run.model, run.options, request.user)
            else:
                queue_evaluation(run.model, run.depths, run.paradigms, run.pair_limit, request.user, run.blimp_dir)
        self.message_user(request, f"Queued {queryset.count()} evaluation(s).")


@admin.register(ModelImport)
class ModelImportAdmin(admin.ModelAdmin):
    """The worker's half of each registration: ONNX export, depth curve and facts, with progress."""

    list_display = ["id", "model", "status", "progress", "progress_message", "created_at", "finished_at"]
    list_filter = ["status"]
    search_fields = ["model__slug", "model__name"]
    readonly_fields = ["model", "status", "progress", "progress_message", "error", "facts", "created_at",
                       "started_at", "finished_at", "requested_by"]  # fmt: skip
    actions = ["rerun"]

    def has_add_permission(self, request):
        return False  # an import starts with an upload (the models' add page, the API or manage.py import_model)

    @admin.action(description="Run the import again (a new row)")
    def rerun(self, request, queryset):
        from .imports import queue_import

        for job in queryset:
            queue_import(job.model, request.user)
        self.message_user(request, f"Queued {queryset.count()} import(s).")
