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
            "models": health.model_states(),
        }
    )


def favicon(request):
    return HttpResponsePermanentRedirect(static("favicon.svg"))


def moved_admin(request, model: str, rest: str):
    """An admin address of a row-store model from before it moved from benchmarks_app to results: the same page
    at its new address (308, so a form posted to the old address is posted again to the new one)."""
    query = request.META.get("QUERY_STRING", "")
    return HttpResponsePermanentRedirect(
        f"/admin/results/{model}/{rest}" + (f"?{query}" if query else ""), preserve_request=True
    )


def api_reference(request):
    """The API reference: every /v1 endpoint and parameter, read from the OpenAPI schema, with runnable examples."""
    from inference.v1 import docs as v1_docs

    base_url = request.build_absolute_uri("/v1").rstrip("/")
    context = {
        "section": "api",
        "operations": v1_docs.v1_operations(),
        "portal_operations": v1_docs.other_operations(),
        "examples": v1_docs.examples(base_url),
        "base_url": base_url,
        "require_key": settings.API_REQUIRE_KEY,
        "limits": {
            "max_tokens": settings.API_MAX_TOKENS,
            "max_prompt_tokens": settings.API_MAX_PROMPT_TOKENS,
            "max_n": settings.API_MAX_N,
            "concurrent": settings.API_MAX_CONCURRENT_GENERATIONS,
            "queue_seconds": settings.API_GENERATION_QUEUE_SECONDS,
            "anon_rpm": settings.API_ANON_REQUESTS_PER_MINUTE,
            "anon_tpm": settings.API_ANON_TOKENS_PER_MINUTE,
        },
    }
    return render(request, "api/reference.html", context)


def glossary(request):
    """Every term the portal's pages link to, with its definition."""
    from portal.glossary import TERMS

    terms = sorted(TERMS, key=lambda term: term.term.lower())
    return render(request, "glossary.html", {"section": "glossary", "terms": terms})


def not_found(request, exception=None):
    if request.path.startswith("/api/"):  # API clients get the API's error shape, not an HTML page
        from portal.api import error_body

        return JsonResponse(error_body(f"No API endpoint at {request.path}.", 404, code="not_found"), status=404)
    return render(request, "404.html", {"path": request.path}, status=404)


def server_error(request):
    return render(request, "500.html", status=500)
