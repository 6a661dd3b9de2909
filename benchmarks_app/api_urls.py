"""JSON API routes for benchmarks_app (mounted under /api/)."""

urlpatterns: list = []
