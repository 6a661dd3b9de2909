"""vLLM-compatible tokenizer endpoints at the server root: POST /tokenize, POST /detokenize, GET /tokenizer_info.

Harnesses (lm-evaluation-harness's `tokenizer_backend=remote`) look for them beside /v1, and send no model: under a
model's own server root (/serve/<id>/tokenize, model_root.py) they speak that model's tokens, at the site root the
default model's unless the request names one. Tokens are the served
model's, as its manifest names them (eqlm.tokenizers): UTF-8 bytes, or GPT-2's BPE. `add_special_tokens` prepends the
beginning-of-text token (the byte "\\n" that the portal's evaluator scores after, or GPT-2's `<|endoftext|>`) and is
off by default, because /v1/completions never adds it itself. Detokenizing bytes that are not valid UTF-8 is lossy
(U+FFFD), never a lone surrogate.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from eqlm.bpe import RanksMissing
from eqlm.tokenizers import Tokenizer, get_tokenizer, tokenizer_name
from models_app.model_ids import base_id
from portal.api import ApiError

from . import ratelimit
from .base import V1View, served_runtime
from .docs import ERROR_RESPONSES
from .plan import chat_prompt
from .serializers import MessageSerializer

TOKENIZER_TAG = "tokenizer (vLLM-compatible)"
TOKEN_NOTATION = {
    "bytes": "one token per UTF-8 byte; ASCII bytes are their character, bytes >= 0x80 are named 'bytes:\\xNN' in "
    "logprobs",
    "gpt2": "GPT-2 BPE; a token is named by its text in logprobs, or 'bytes:\\xNN...' (every byte) when its bytes are "
    "not valid UTF-8 alone",
}
CHAT_TEMPLATE = "{% for m in messages %}{% if m['content'] %}{{ m['content'] }}\n{% endif %}{% endfor %}"


class TokenizeRequestSerializer(serializers.Serializer):
    model = serializers.CharField(required=False, allow_null=True, default=None, help_text="Default: eqlm-demo.")
    prompt = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
    messages = MessageSerializer(many=True, required=False, allow_empty=False)
    add_special_tokens = serializers.BooleanField(
        required=False, allow_null=True, default=False,
        help_text='Prepend the beginning-of-text token: the byte "\\n" (10), or GPT-2\'s <|endoftext|> (50256). Off by '
        "default: completions never add it.",
    )  # fmt: skip
    return_token_strs = serializers.BooleanField(required=False, allow_null=True, default=False)

    def validate(self, attrs):
        if ("prompt" in attrs) == ("messages" in attrs):
            raise serializers.ValidationError({"prompt": "Send exactly one of prompt or messages."})
        return attrs


class DetokenizeRequestSerializer(serializers.Serializer):
    model = serializers.CharField(required=False, allow_null=True, default=None)
    tokens = serializers.ListField(
        child=serializers.IntegerField(), allow_empty=True, help_text="Token ids of the model's tokenizer."
    )


def model_context(model_id: str | None) -> tuple[str, int, Tokenizer]:
    """(id as sent, context length in tokens, tokenizer) of the named model, the default one when None."""
    if model_id is None:
        from models_app.serving import DEFAULT_MODEL_ID

        model_id = DEFAULT_MODEL_ID
    generator = served_runtime(base_id(model_id))
    try:
        tokenizer = get_tokenizer(tokenizer_name(generator.manifest))
    except (ValueError, RanksMissing) as exc:  # a tokenizer the portal does not know, or GPT-2's ranks not installed
        raise ApiError(
            f"The tokenizer of '{model_id}' is unavailable on this server: {exc}", status_code=503,
            code="model_unavailable",
        ) from None  # fmt: skip
    return model_id, generator.max_positions, tokenizer


def check_tokens(tokens: list[int], tokenizer: Tokenizer) -> None:
    """A 400 naming `tokens` for the first id outside the model's vocabulary."""
    for i, token in enumerate(tokens):
        if not 0 <= token < tokenizer.vocab_size:
            kind = "bytes" if tokenizer.name == "bytes" else f"{tokenizer.name} ids"
            raise ApiError(
                f"tokens[{i}] is {token}: token ids are {kind}, 0 to {tokenizer.vocab_size - 1}.", param="tokens"
            )


class TokenizeView(V1View):
    @extend_schema(
        operation_id="tokenize",
        tags=[TOKENIZER_TAG],
        summary="Tokenize a prompt or a conversation in the model's tokens (UTF-8 bytes or GPT-2 BPE)",
        request=TokenizeRequestSerializer,
        responses={
            200: {
                "type": "object",
                "properties": {
                    "tokens": {"type": "array", "items": {"type": "integer"}},
                    "count": {"type": "integer"},
                    "max_model_len": {"type": "integer"},
                    "token_strs": {"type": "array", "items": {"type": "string"}, "nullable": True},
                },
            },
            **ERROR_RESPONSES,
        },
    )
    def post(self, request):
        serializer = TokenizeRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        ratelimit.admit(self.caller, 0)
        _, context, tokenizer = model_context(data["model"] or self.served_model)
        text = data["prompt"] if "prompt" in data else chat_prompt(data["messages"])
        tokens = ([tokenizer.bos_token_id] if data["add_special_tokens"] else []) + tokenizer.encode(text)
        strs = [tokenizer.token_string(t) for t in tokens] if data["return_token_strs"] else None
        return Response({"tokens": tokens, "count": len(tokens), "max_model_len": context, "token_strs": strs})


class DetokenizeView(V1View):
    @extend_schema(
        operation_id="detokenize",
        tags=[TOKENIZER_TAG],
        summary="Token ids back to text (lossy: U+FFFD for bytes that are not valid UTF-8)",
        request=DetokenizeRequestSerializer,
        responses={200: {"type": "object", "properties": {"prompt": {"type": "string"}}}, **ERROR_RESPONSES},
    )
    def post(self, request):
        serializer = DetokenizeRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        ratelimit.admit(self.caller, 0)
        _, _, tokenizer = model_context(serializer.validated_data["model"] or self.served_model)
        check_tokens(serializer.validated_data["tokens"], tokenizer)
        return Response({"prompt": tokenizer.decode(serializer.validated_data["tokens"])})


class TokenizerInfoView(V1View):
    @extend_schema(
        operation_id="tokenizer_info",
        tags=[TOKENIZER_TAG],
        summary="What the model's tokenizer is (bytes or GPT-2 BPE), its special tokens and the context length",
        parameters=[OpenApiParameter("model", str, required=False, description="Default: eqlm-demo.")],
        responses={200: {"type": "object"}, **ERROR_RESPONSES},
    )
    def get(self, request):
        ratelimit.admit(self.caller, 0)
        model_id, context, tokenizer = model_context(request.query_params.get("model") or self.served_model)
        return Response({"model": model_id, **tokenizer_info(tokenizer), "model_max_length": context})


def tokenizer_info(tokenizer: Tokenizer) -> dict:
    """The tokenizer's description in Hugging Face's field names (what harnesses read from /tokenizer_info)."""
    return {
        "tokenizer": tokenizer.name,
        "tokenizer_class": tokenizer.tokenizer_class,
        "vocab_size": tokenizer.vocab_size,
        "bos_token": tokenizer.bos_token,
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token": tokenizer.eot_token,
        "eos_token_id": tokenizer.eot_token_id,
        "pad_token": None,
        "unk_token": None,
        "add_bos_token": False,
        "add_eos_token": False,
        "chat_template": CHAT_TEMPLATE,
        "token_notation": TOKEN_NOTATION[tokenizer.name],
    }
