"""Pages of the model registry: /models/, each model's page /models/<id>/, its tables and the recipes."""

from django.urls import path, re_path

from . import model_detail, model_pages

app_name = "models"
urlpatterns = [
    path("models/", model_pages.models_page, name="models"),
    re_path(
        r"^models/(?P<slug>[a-z0-9-]+)/(?P<table>bpb|blimp|warm|samples|stages|check|measured|halting)\.(?P<fmt>csv|json)$",
        model_pages.table_download,
        name="model-table",
    ),
    re_path(r"^models/recipes/(?P<name>[a-z0-9-]+)\.toml$", model_pages.recipe_file, name="recipe"),
    re_path(r"^models/(?P<slug>[a-z0-9-]+)/$", model_detail.model_detail, name="model-detail"),
]
