"""The registry's admin pages also under the paths they had when the registry was part of the inference app:
/admin/inference/registeredmodel/ (and evaluationrun/, modelimport/) answer as /admin/models_app/... do, so
bookmarks and links keep working. Mounted by portal/urls.py before the admin's own routes."""

from django.contrib import admin
from django.urls import include, path

from .models import EvaluationRun, ModelImport, RegisteredModel

urlpatterns = [
    path(f"{model._meta.model_name}/", include(admin.site.get_model_admin(model).urls))
    for model in (RegisteredModel, EvaluationRun, ModelImport)
]
