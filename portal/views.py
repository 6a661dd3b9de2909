"""Project-level views: health, the API reference page and error pages."""

from django.conf import settings
from django.http import HttpResponsePermanentRedirect, JsonResponse
from django.shortcuts import render
from django.templatetags.static import static
from django.views.decorators.cache import never_cache

from . import health


@never_cache
def health_view(request):
    database = health.database_status()
    broker = health.broker_status()
    workers = health.live_workers(broker)
    healthy = database == "ok" and broker in ("ok", "eager")
    return JsonResponse(
        {
            "status": "ok" if healthy else "degraded",
            "version": settings.VERSION,
            "commit": settings.GIT_COMMIT,
            "database": database,
            "broker": broker,
            "workers": workers,
        }
    )


def favicon(request):
    return HttpResponsePermanentRedirect(static("favicon.svg"))


def api_reference(request):
    return render(request, "api/reference.html", {"section": "api"})


def section_pending(request, section: str, title: str):
    """A plain page for a section whose feature has not landed yet."""
    return render(request, "pending.html", {"section": section, "title": title})


def not_found(request, exception=None):
    return render(request, "404.html", {"path": request.path}, status=404)


def server_error(request):
    return render(request, "500.html", status=500)
