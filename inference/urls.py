"""Pages of the depth-dial demo and the /v1/ API (mounted at the site root); the registry's are models_app/urls.py."""

from django.conf import settings
from django.urls import include, path, re_path

from . import views

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
    # The OpenAI-compatible API (inference/v1/).
    path("v1/", include("inference.v1.urls")),
]
