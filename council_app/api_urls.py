"""JSON API routes for council_app (mounted under /api/)."""

urlpatterns: list = []
