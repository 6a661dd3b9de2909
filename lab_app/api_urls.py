"""JSON API routes for lab_app (mounted under /api/)."""

urlpatterns: list = []
