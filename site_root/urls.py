"""Top-level URLs: one include per section, the health probe and the API schema."""

from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from findings_app.views import home
from inference.v1 import tokenizer as tokenizer_views

from . import views

admin.site.site_header = "EqLM Portal admin"
admin.site.site_title = "EqLM Portal admin"
admin.site.index_title = "Operations"

urlpatterns = [
    path("", home, name="home"),
    path("favicon.ico", views.favicon),
    re_path(r"^admin/benchmarks_app/(?P<model>sourcefile|run|arm|resultrow)/(?P<rest>.*)$", views.moved_admin),
    path("admin/inference/", include("models_app.admin_urls")),  # the registry's admin pages at their old paths
    path("admin/", admin.site.urls),
    path("api/health", views.health_view, name="health"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path(
        "api/docs/",
        SpectacularSwaggerSplitView.as_view(url_name="api-schema", template_name="api/swagger.html"),
        name="api-docs",
    ),
    path("api/", views.api_reference, name="api-reference"),
    path("glossary/", views.glossary, name="glossary"),
    path("findings/", include("findings_app.urls")),
    path("benchmarks/experiments/", include("experiments_app.urls")),  # before the tables' /benchmarks/<slug>/
    path("benchmarks/", include("benchmarks_app.urls")),
    path("lab/", include("lab_app.urls")),
    path("council/", include("council_app.urls")),
    path("", include("models_app.urls")),
    path("", include("inference.urls")),
    # vLLM-compatible tokenizer endpoints at the root, where harnesses look (inference/v1/tokenizer.py)
    path("tokenize", tokenizer_views.TokenizeView.as_view(), name="tokenize"),
    path("detokenize", tokenizer_views.DetokenizeView.as_view(), name="detokenize"),
    path("tokenizer_info", tokenizer_views.TokenizerInfoView.as_view(), name="tokenizer-info"),
    # one model's own server root, for harnesses that send no model to /tokenize (inference/v1/model_root.py)
    path("serve/<str:served_model>/", include("inference.v1.model_root")),
    path("api/", include("findings_app.api_urls")),
    path("api/", include("benchmarks_app.api_urls")),
    path("api/", include("lab_app.api_urls")),
    path("api/", include("council_app.api_urls")),
    path("api/", include("models_app.api_urls")),
    path("api/", include("experiments_app.api_urls")),
]

handler404 = "site_root.views.not_found"
handler500 = "site_root.views.server_error"
