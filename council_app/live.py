"""The live council on /council/: the chat's members and controls, and the page's own chat endpoint.

The page talks to the same chat completions view as /v1/ (inference/v1/views.py with the council hooks), under the
page's session and CSRF protection instead of an API key; it is counted as an anonymous caller (the anonymous
rate limits and the generation concurrency cap apply as on /v1/).
"""

from __future__ import annotations

from django.conf import settings
from django.urls import reverse
from rest_framework.authentication import CSRFCheck
from rest_framework.exceptions import PermissionDenied

from eqlm.council import member_refuses
from inference.v1.council import council_defaults
from inference.v1.keys import Caller, client_address
from inference.v1.kinetic import DEFAULT_MEMBERS
from inference.v1.views import ChatCompletionView
from models_app.model_ids import COUNCIL_ID

CHAT_SAMPLING = {"temperature": 0.8, "top_p": 0.9, "seed": 0}  # as the dial samples


def live_context() -> dict:
    """The members a reader can pick (every servable model that can be a member: not the council, not an explicit
    transformer), the defaults checked."""
    from models_app.serving import model_cards

    try:
        cards = model_cards()
    except Exception:  # noqa: BLE001 - the record below must render even when no model can be listed
        cards = {}
    ids = [
        card_id
        for card_id, card in cards.items()
        if not card.error and card_id != COUNCIL_ID and not member_refuses(card.manifest)  # not an explicit model
    ]
    defaults = [m for m in DEFAULT_MEMBERS if m in ids]
    if len(defaults) < 2:  # a server without the second-domain model: any two servable models
        defaults = (defaults + [m for m in ids if m not in defaults])[:2]
    # Default members first (their colours stay the same whichever other models are servable).
    ordered = defaults + [m for m in ids if m not in defaults]
    return {
        "endpoint": reverse("council:live-chat"),
        "council_id": COUNCIL_ID,
        "members": [{"id": m, "default": m in defaults} for m in ordered],
        # The API's own kinetic defaults (the bench's best), and sampling: greedy decoding of these byte models
        # falls into loops and runs of spaces, so the chat samples unless the reader sets temperature 0.
        "defaults": {**council_defaults(), **CHAT_SAMPLING},
        "max_tokens": min(128, settings.API_MAX_TOKENS),
    }


class PageCaller:
    """DRF authentication for the page: CSRF-checked, counted as the anonymous client address."""

    def authenticate(self, request):
        from django.contrib.auth.models import AnonymousUser

        check = CSRFCheck(lambda req: None)
        check.process_request(request._request)
        reason = check.process_view(request._request, None, (), {})
        if reason:
            raise PermissionDenied(f"CSRF failed: {reason}")
        caller = Caller(
            f"ip:{client_address(request._request)}",
            settings.API_ANON_REQUESTS_PER_MINUTE,
            settings.API_ANON_TOKENS_PER_MINUTE,
        )
        return AnonymousUser(), caller

    def authenticate_header(self, request):
        return None


class LiveChatView(ChatCompletionView):
    """POST /council/live/chat: /v1/chat/completions for the page (any servable model, or the council)."""

    authentication_classes = [PageCaller]
    schema = None  # not part of the public API schema
