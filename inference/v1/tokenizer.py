"""vLLM-compatible tokenizer endpoints at the server root: POST /tokenize, POST /detokenize, GET /tokenizer_info.

Harnesses (lm-evaluation-harness's `tokenizer_backend=remote`) look for them beside /v1. Tokens are UTF-8 bytes;
`add_special_tokens` prepends the beginning-of-text byte "\\n" (the one the portal's evaluator scores after) and
is off by default, because /v1/completions never adds it itself. Detokenizing bytes that are not valid UTF-8 is
lossy (U+FFFD), never a lone surrogate.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from eqlm.tokenizer import BOS_TOKEN, BOS_TOKEN_ID, VOCAB_SIZE, decode, encode, token_string
from inference.model_ids import base_id

from . import ratelimit
from .docs import ERROR_RESPONSES
from .plan import chat_prompt
from .serializers import MessageSerializer
from .views import V1View, served_runtime

TOKENIZER_TAG = "tokenizer (vLLM-compatible)"
CHAT_TEMPLATE = "{% for m in messages %}{% if m['content'] %}{{ m['content'] }}\n{% endif %}{% endfor %}"


class TokenizeRequestSerializer(serializers.Serializer):
    model = serializers.CharField(required=False, allow_null=True, default=None, help_text="Default: eqlm-demo.")
    prompt = serializers.CharField(required=False, allow_blank=True, trim_whitespace=False)
    messages = MessageSerializer(many=True, required=False, allow_empty=False)
    add_special_tokens = serializers.BooleanField(
        required=False, allow_null=True, default=False,
        help_text='Prepend the beginning-of-text byte "\\n" (10). Off by default: completions never add it.',
    )  # fmt: skip
    return_token_strs = serializers.BooleanField(required=False, allow_null=True, default=False)

    def validate(self, attrs):
        if ("prompt" in attrs) == ("messages" in attrs):
            raise serializers.ValidationError({"prompt": "Send exactly one of prompt or messages."})
        return attrs


class DetokenizeRequestSerializer(serializers.Serializer):
    model = serializers.CharField(required=False, allow_null=True, default=None)
    tokens = serializers.ListField(child=serializers.IntegerField(), allow_empty=True, help_text="Byte token ids.")

    def validate_tokens(self, tokens: list[int]) -> list[int]:
        for i, token in enumerate(tokens):
            if not 0 <= token < VOCAB_SIZE:
                raise serializers.ValidationError(f"tokens[{i}] is {token}: token ids are bytes, 0 to 255.")
        return tokens


def model_context(model_id: str | None) -> tuple[str, int]:
    """(id as sent, context length in tokens) of the named model, the default one when None."""
    if model_id is None:
        from inference.serving import DEFAULT_MODEL_ID

        model_id = DEFAULT_MODEL_ID
    generator = served_runtime(base_id(model_id))
    return model_id, generator.max_positions


class TokenizeView(V1View):
    @extend_schema(
        operation_id="tokenize",
        tags=[TOKENIZER_TAG],
        summary="Tokenize a prompt or a conversation (UTF-8 bytes)",
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
        _, context = model_context(data["model"])
        text = data["prompt"] if "prompt" in data else chat_prompt(data["messages"])
        tokens = ([BOS_TOKEN_ID] if data["add_special_tokens"] else []) + encode(text)
        strs = [token_string(t) for t in tokens] if data["return_token_strs"] else None
        return Response({"tokens": tokens, "count": len(tokens), "max_model_len": context, "token_strs": strs})


class DetokenizeView(V1View):
    @extend_schema(
        operation_id="detokenize",
        tags=[TOKENIZER_TAG],
        summary="Bytes back to text (lossy: U+FFFD for bytes that are not valid UTF-8)",
        request=DetokenizeRequestSerializer,
        responses={200: {"type": "object", "properties": {"prompt": {"type": "string"}}}, **ERROR_RESPONSES},
    )
    def post(self, request):
        serializer = DetokenizeRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        ratelimit.admit(self.caller, 0)
        model_context(serializer.validated_data["model"])
        return Response({"prompt": decode(serializer.validated_data["tokens"])})


class TokenizerInfoView(V1View):
    @extend_schema(
        operation_id="tokenizer_info",
        tags=[TOKENIZER_TAG],
        summary="What the tokenizer is: bytes, its special tokens and the context length",
        parameters=[OpenApiParameter("model", str, required=False, description="Default: eqlm-demo.")],
        responses={200: {"type": "object"}, **ERROR_RESPONSES},
    )
    def get(self, request):
        ratelimit.admit(self.caller, 0)
        model_id, context = model_context(request.query_params.get("model") or None)
        return Response(
            {
                "model": model_id,
                "tokenizer_class": "EqLMByteTokenizer",
                "vocab_size": VOCAB_SIZE,
                "bos_token": BOS_TOKEN,
                "bos_token_id": BOS_TOKEN_ID,
                "eos_token": None,
                "eos_token_id": None,
                "pad_token": None,
                "unk_token": None,
                "model_max_length": context,
                "add_bos_token": False,
                "add_eos_token": False,
                "chat_template": CHAT_TEMPLATE,
                "token_notation": "one token per UTF-8 byte; ASCII bytes are their character, bytes >= 0x80 are "
                "named 'bytes:\\xNN' in logprobs",
            }
        )
