"""Pages of the depth-dial demo and the models registry (mounted at the site root)."""

from django.urls import path, re_path

from . import api_v1, demo_views, registry_views

app_name = "inference"
urlpatterns = [
    path("demo/", demo_views.demo, name="demo"),
    re_path(r"^demo/model/(?P<name>[A-Za-z0-9_.-]+)$", demo_views.model_file, name="demo-model-file"),
    re_path(r"^demo/ort/(?P<name>[A-Za-z0-9_.-]+)$", demo_views.ort_worker_script, name="demo-ort"),
    re_path(r"^demo/quality\.(?P<fmt>csv|json)$", demo_views.quality_download, name="demo-quality"),
    path("models/", registry_views.models_page, name="models"),
    re_path(
        r"^models/(?P<slug>[a-z0-9-]+)/(?P<table>bpb|blimp|warm|samples)\.(?P<fmt>csv|json)$",
        registry_views.table_download,
        name="model-table",
    ),
    # The OpenAI-compatible API (inference/api_v1.py).
    path("v1/models", api_v1.ModelListView.as_view(), name="v1-models"),
    path("v1/models/<str:model_id>", api_v1.ModelDetailView.as_view(), name="v1-model"),
    path("v1/completions", api_v1.CompletionView.as_view(), name="v1-completions"),
    path("v1/chat/completions", api_v1.ChatCompletionView.as_view(), name="v1-chat-completions"),
    re_path(r"^v1/", api_v1.not_found, name="v1-not-found"),
]
