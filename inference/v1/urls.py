"""Routes of the OpenAI-compatible API, included under /v1/ by inference/urls.py (names stay in `inference:`)."""

from django.urls import path, re_path

from . import views

urlpatterns = [
    path("models", views.ModelListView.as_view(), name="v1-models"),
    path("models/<str:model_id>", views.ModelDetailView.as_view(), name="v1-model"),
    path("completions", views.CompletionView.as_view(), name="v1-completions"),
    path("chat/completions", views.ChatCompletionView.as_view(), name="v1-chat-completions"),
    re_path(r"", views.not_found, name="v1-not-found"),
]
