"""Admin for API keys: create a key (its secret is shown once, on the page after saving), revoke, see usage."""

import secrets

from django.contrib import admin, messages
from django.template.response import TemplateResponse
from django.utils import timezone

from inference.models import KEY_PREFIX, ApiKey, hash_key


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "prefix",
        "is_active",
        "requests_per_minute",
        "tokens_per_minute",
        "created_at",
        "last_used_at",
    ]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter), "created_at"]
    search_fields = ["name", "prefix"]
    readonly_fields = ["prefix", "created_at", "last_used_at", "revoked_at"]
    fields = ["name", "requests_per_minute", "tokens_per_minute", "prefix", "created_at", "last_used_at", "revoked_at"]
    actions = ["revoke_keys"]

    @admin.display(boolean=True, description="active")
    def is_active(self, obj: ApiKey) -> bool:
        return obj.is_active

    def save_model(self, request, obj, form, change):
        if not change:
            raw = KEY_PREFIX + secrets.token_urlsafe(32)
            obj.prefix = raw[:12]
            obj.key_hash = hash_key(raw)
            request._issued_api_key = raw  # shown once by response_add; never stored
        super().save_model(request, obj, form, change)

    def response_add(self, request, obj, post_url_continue=None):
        raw = getattr(request, "_issued_api_key", None)
        if raw is None:
            return super().response_add(request, obj, post_url_continue)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "key": obj,
            "raw_key": raw,
            "title": "API key created",
        }
        response = TemplateResponse(request, "admin/inference/apikey_issued.html", context)
        response["Cache-Control"] = "no-store"
        return response

    @admin.action(description="Revoke the selected keys")
    def revoke_keys(self, request, queryset):
        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(request, f"Revoked {count} key(s). Requests with them now get 401.", messages.SUCCESS)
