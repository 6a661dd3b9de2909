"""Pages of the council record."""

from django.urls import path

from . import live, views

app_name = "council"
urlpatterns = [
    path("", views.index, name="index"),
    path("replay/", views.replay, name="replay"),
    path("live/chat", live.LiveChatView.as_view(), name="live-chat"),
    path("tables/<slug:table>.csv", views.table_csv, name="csv"),
]
