"""One model's own server root, /serve/<model id>/: its completions and tokenizer endpoints, as a vLLM server has.

lm-evaluation-harness's `tokenizer_backend=remote` derives the tokenizer's address from the completions URL (it
strips /v1/completions) and sends no model to /tokenize or /tokenizer_info, so at the site root it would read the
default model's tokens. Pointed at /serve/<id>/v1/completions, it tokenizes in that model's tokens (GPT-2 BPE for an
imported programme model). A generation request there must name that model (a suffix such as @depth=12 is welcome).
The routes are left out of the OpenAPI schema: they are the site root's operations, documented there.
"""

from django.urls import path
from drf_spectacular.utils import extend_schema

from .tokenizer import DetokenizeView, TokenizerInfoView, TokenizeView
from .views import ChatCompletionView, CompletionView, not_found


def served(view_class, method: str):
    """`view_class` with its `method` handler bound to the root's model (the URL's `served_model`)."""
    handler = getattr(view_class, method)

    @extend_schema(exclude=True)
    def bound(self, request, served_model: str):
        self.served_model = served_model
        return handler(self, request)

    return type(f"Served{view_class.__name__}", (view_class,), {method: bound})


urlpatterns = [
    path("v1/completions", served(CompletionView, "post").as_view(), name="serve-completions"),
    path("v1/chat/completions", served(ChatCompletionView, "post").as_view(), name="serve-chat-completions"),
    path("tokenize", served(TokenizeView, "post").as_view(), name="serve-tokenize"),
    path("detokenize", served(DetokenizeView, "post").as_view(), name="serve-detokenize"),
    path("tokenizer_info", served(TokenizerInfoView, "get").as_view(), name="serve-tokenizer-info"),
    path("<path:rest>", not_found, name="serve-not-found"),
]
