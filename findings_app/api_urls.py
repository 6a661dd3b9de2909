"""JSON API routes for findings_app (mounted under /api/)."""

urlpatterns: list = []
