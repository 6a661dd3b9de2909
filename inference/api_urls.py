"""JSON API routes for inference (mounted under /api/)."""

urlpatterns: list = []
