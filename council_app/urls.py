"""Pages of the council record."""

from django.urls import path

from . import views

app_name = "council"
urlpatterns = [
    path("", views.index, name="index"),
    path("replay/", views.replay, name="replay"),
    path("tables/<slug:table>.csv", views.table_csv, name="csv"),
]
