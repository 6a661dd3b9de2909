"""Pages of the depth-dial demo and the models registry, and the /v1/ API (mounted at the site root)."""

from django.conf import settings
from django.urls import include, path, re_path

from . import model_detail, model_pages, views

app_name = "inference"
urlpatterns = [
    path("demo/", views.demo, name="demo"),
    re_path(r"^demo/models/(?P<model_id>[A-Za-z0-9_.-]+)/manifest\.json$", views.model_manifest, name="model-manifest"),
    re_path(
        r"^demo/models/(?P<model_id>[A-Za-z0-9_.-]+)/graphs/(?P<sha256>[0-9a-f]{64})\.onnx$",
        views.model_graph,
        name="model-graph",
    ),
    re_path(  # where a bundled model's files were served before models/<id>/, as static files (redirects)
        rf"^{settings.STATIC_URL.strip('/')}/models/(?P<model_id>[A-Za-z0-9_.-]+)/(?P<name>[A-Za-z0-9_.-]+)$",
        views.legacy_model_file,
        name="legacy-model-file",
    ),
    re_path(r"^demo/ort/(?P<name>[A-Za-z0-9_.-]+)$", views.ort_worker_script, name="demo-ort"),
    re_path(r"^demo/quality\.(?P<fmt>csv|json)$", views.quality_download, name="demo-quality"),
    path("models/", model_pages.models_page, name="models"),
    re_path(
        r"^models/(?P<slug>[a-z0-9-]+)/(?P<table>bpb|blimp|warm|samples|stages|check|measured|halting)\.(?P<fmt>csv|json)$",
        model_pages.table_download,
        name="model-table",
    ),
    re_path(r"^models/recipes/(?P<name>[a-z0-9-]+)\.toml$", model_pages.recipe_file, name="recipe"),
    re_path(r"^models/(?P<slug>[a-z0-9-]+)/$", model_detail.model_detail, name="model-detail"),
    # The OpenAI-compatible API (inference/v1/).
    path("v1/", include("inference.v1.urls")),
]
