"""The OpenAI-compatible API (/v1/): models, completions and chat completions, with EqLM's own controls.

Requests follow OpenAI's wire format; `depth`, `tol`, `warm_start` and `solver` are extra top-level fields (the
official client sends them through `extra_body`) and every response carries an `eqlm` object. Generation runs on
the ONNX generation service (eqlm.runtime: onnxruntime + numpy, never torch).
"""

import json
import logging
import math
import time
import uuid
from dataclasses import dataclass, field

from django.conf import settings
from django.http import StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import JSONParser
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.api import ApiError, error_body

from . import ratelimit
from .keys import ApiKeyAuthentication

log = logging.getLogger(__name__)

DEPTH_MIN, DEPTH_MAX = 1, 32
DEFAULT_DEPTH = 8
COMPLETIONS_DEFAULT_MAX_TOKENS = 16  # OpenAI's default for /v1/completions
CHAT_DEFAULT_MAX_TOKENS = 64
ERROR_RESPONSES = {
    400: OpenApiResponse(description="invalid_request_error naming the bad parameter (e.g. depth)"),
    401: OpenApiResponse(description="authentication_error: missing or wrong API key (when keys are required)"),
    404: OpenApiResponse(description="model_not_found"),
    429: OpenApiResponse(description="rate_limit_error, with a Retry-After header"),
    503: OpenApiResponse(description="the server is generating at capacity (Retry-After) or the model is unavailable"),
}

# --- plumbing: JSON whatever the content type, errors in one shape --------------------------------------------


class AnyContentTypeJSONParser(JSONParser):
    """Reads the body as JSON whatever Content-Type says (curl -d sends form encoding by default)."""

    media_type = "application/json"  # what the schema documents; FirstRendererNegotiation picks it for any type


class FirstRendererNegotiation(BaseContentNegotiation):
    """Answer JSON (or an event stream) whatever Accept says, instead of a 406."""

    def select_parser(self, request, parsers):
        return parsers[0]

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class V1View(APIView):
    authentication_classes = [ApiKeyAuthentication]
    permission_classes: list = []
    throttle_classes: list = []
    parser_classes = [AnyContentTypeJSONParser]
    renderer_classes = [JSONRenderer]
    content_negotiation_class = FirstRendererNegotiation

    @property
    def caller(self):
        return self.request.auth


def get_generator_or_503():
    try:
        from .serving import get_generator

        return get_generator()
    except Exception as exc:
        log.exception("the demo model could not be loaded")
        raise ApiError(f"The model is unavailable on this server: {exc}", status_code=503, code="model_unavailable")


def check_model(name: str):
    generator = get_generator_or_503()
    if name != generator.model_id:
        raise ApiError(
            f"The model '{name}' does not exist. Available: {generator.model_id}.",
            status_code=404,
            param="model",
            code="model_not_found",
        )
    return generator


def model_object(model_id: str) -> dict:
    return {"id": model_id, "object": "model", "created": model_created(), "owned_by": "eqlm-portal"}


def model_created() -> int:
    manifest = settings.DEMO_MODEL_ONNX_DIR / "manifest.json"
    try:
        return int(manifest.stat().st_mtime)
    except OSError:
        return 0


# --- request serializers (they validate, and they are the OpenAPI schema) ---------------------------------------


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string"},
            {"type": "array", "items": {"type": "string"}},
            {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 255}},
        ],
        "description": "Text to continue: a string, a list of strings (one completion each), or byte token ids.",
    }
)
class PromptField(serializers.Field):
    def to_internal_value(self, data) -> list[str]:
        if isinstance(data, str):
            return [data]
        if isinstance(data, list) and data and all(isinstance(item, str) for item in data):
            return list(data)
        if isinstance(data, list) and data and all(isinstance(t, int) and not isinstance(t, bool) for t in data):
            if not all(0 <= t <= 255 for t in data):
                raise serializers.ValidationError("Token ids are UTF-8 bytes: integers from 0 to 255.")
            return [bytes(data).decode("utf-8", errors="replace")]
        raise serializers.ValidationError("Expected a string, a non-empty list of strings, or a list of token ids.")

    def to_representation(self, value):
        return value


@extend_schema_field(
    {
        "oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "maxItems": 4}],
        "nullable": True,
        "description": "Up to 4 strings; generation stops before the first one produced.",
    }
)
class StopField(serializers.Field):
    def to_internal_value(self, data) -> tuple[str, ...]:
        if data is None:
            return ()
        items = [data] if isinstance(data, str) else data
        if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
            raise serializers.ValidationError("Expected a string or a list of strings.")
        if len(items) > 4:
            raise serializers.ValidationError("At most 4 stop sequences.")
        if any(item == "" for item in items):
            raise serializers.ValidationError("Stop sequences must not be empty.")
        return tuple(items)

    def to_representation(self, value):
        return list(value)


@extend_schema_field({"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 1})
class PositiveFractionField(serializers.FloatField):
    """A float in (0, 1]."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if value <= 0:
            raise serializers.ValidationError("Must be greater than 0.")
        return value


class StreamOptionsSerializer(serializers.Serializer):
    include_usage = serializers.BooleanField(
        required=False, default=False, help_text="Send a last chunk with `usage` (and empty `choices`)."
    )


class GenerationParamsSerializer(serializers.Serializer):
    """Fields shared by /v1/completions and /v1/chat/completions (OpenAI's, then EqLM's)."""

    model = serializers.CharField(help_text="The model id from /v1/models (`eqlm-demo`).")
    temperature = serializers.FloatField(
        required=False, allow_null=True, default=1.0, min_value=0.0, max_value=2.0,
        help_text="0 is greedy (deterministic).",
    )  # fmt: skip
    top_p = serializers.FloatField(required=False, allow_null=True, default=1.0, min_value=0.0, max_value=1.0)
    stop = StopField(required=False, default=(), allow_null=True)
    seed = serializers.IntegerField(
        required=False, allow_null=True, default=None, min_value=0, max_value=2**63 - 1,
        help_text="Seeds sampling: the same request with the same seed gives the same text.",
    )  # fmt: skip
    stream = serializers.BooleanField(
        required=False, allow_null=True, default=False, help_text="Server-sent events, ending [DONE]."
    )
    stream_options = StreamOptionsSerializer(required=False, allow_null=True, default=None)
    depth = serializers.IntegerField(
        required=False, allow_null=True, default=None, min_value=DEPTH_MIN, max_value=DEPTH_MAX,
        help_text=f"EqLM: iterations of the weight-tied block per token (default {DEFAULT_DEPTH}; "
        "with `tol`, the cap on iterations).",
    )  # fmt: skip
    tol = PositiveFractionField(
        required=False, allow_null=True, default=None, max_value=1.0,
        help_text="EqLM: adaptive halting. Each position stops iterating once its relative residual "
        "‖f(z)−z‖/‖z‖ falls below tol (> 0).",
    )  # fmt: skip
    warm_start = serializers.BooleanField(
        required=False, allow_null=True, default=False,
        help_text="EqLM: start each new token from the previous position's state.",
    )  # fmt: skip
    solver = serializers.ChoiceField(
        choices=["picard", "anderson"], required=False, allow_null=True, default="picard",
        help_text="EqLM: fixed-point solver.",
    )  # fmt: skip

    def get_fields(self):
        fields = super().get_fields()
        cap = settings.API_MAX_TOKENS
        for name in ("max_tokens", "max_completion_tokens"):
            fields[name] = serializers.IntegerField(
                required=False, allow_null=True, default=None, min_value=1, max_value=cap,
                help_text=f"Most tokens (UTF-8 bytes) to generate, 1–{cap} on this server.",
            )  # fmt: skip
        fields["n"] = serializers.IntegerField(
            required=False, allow_null=True, default=1, min_value=1, max_value=settings.API_MAX_N,
            help_text="Choices to generate.",
        )  # fmt: skip
        return fields

    NULL_MEANS_DEFAULT = {
        "temperature": 1.0,
        "top_p": 1.0,
        "stream": False,
        "warm_start": False,
        "solver": "picard",
        "n": 1,
    }

    def validate(self, attrs):
        """An explicit null is OpenAI's "use the default" (clients send it for unset optional fields)."""
        for name, default in self.NULL_MEANS_DEFAULT.items():
            if attrs.get(name) is None:
                attrs[name] = default
        attrs["stop"] = attrs.get("stop") or ()
        return attrs


class CompletionRequestSerializer(GenerationParamsSerializer):
    prompt = PromptField(help_text="Text to continue.")
    echo = serializers.BooleanField(required=False, default=False, help_text="Prefix each choice with its prompt.")


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string"},
            {"type": "array", "items": {"type": "object", "properties": {"type": {"type": "string"}, "text": {}}}},
        ],
        "nullable": True,
    }
)
class MessageContentField(serializers.Field):
    def to_internal_value(self, data) -> str:
        if data is None:
            return ""
        if isinstance(data, str):
            return data
        if isinstance(data, list):
            parts = []
            for part in data:
                if not (isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)):
                    raise serializers.ValidationError("Only text content parts are supported.")
                parts.append(part["text"])
            return "".join(parts)
        raise serializers.ValidationError("Expected a string or a list of text parts.")

    def to_representation(self, value):
        return value


NOT_MESSAGES = "Expected a non-empty list of messages."


class MessageSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=["system", "developer", "user", "assistant", "tool"])
    content = MessageContentField(required=False, allow_null=True, default="")


class ChatCompletionRequestSerializer(GenerationParamsSerializer):
    messages = MessageSerializer(
        many=True,
        allow_empty=False,
        help_text="The conversation so far.",
        error_messages={"not_a_list": NOT_MESSAGES, "empty": NOT_MESSAGES},
    )


def chat_prompt(messages: list[dict]) -> str:
    """The demo model is not instruction-tuned: the conversation becomes plain text for it to continue."""
    return "\n".join(message["content"] for message in messages if message["content"]) + "\n"


# --- generation -------------------------------------------------------------------------------------------------


@dataclass
class Plan:
    """A validated request turned into what the generator needs, plus what the response reports."""

    prompts: list[str]
    n: int
    max_tokens: int
    params: dict
    stream: bool
    include_usage: bool
    echo: bool = False
    eqlm: dict = field(default_factory=dict)

    def requests(self):
        """(choice index, GenerationRequest) for every prompt × n, with per-choice seeds when sampling."""
        from eqlm.runtime import GenerationRequest

        index = 0
        for prompt in self.prompts:
            for copy in range(self.n):
                params = dict(self.params)
                if params["seed"] is not None:
                    params["seed"] = params["seed"] + copy
                yield index, prompt, GenerationRequest(prompt=prompt, max_tokens=self.max_tokens, **params)
                index += 1


def prompt_token_count(text: str) -> int:
    return len(text.encode("utf-8"))  # the demo model's tokens are UTF-8 bytes


def build_plan(data: dict, prompts: list[str], default_max_tokens: int, param: str) -> Plan:
    max_tokens = data.get("max_completion_tokens") or data.get("max_tokens") or default_max_tokens
    max_tokens = min(max_tokens, settings.API_MAX_TOKENS)
    for prompt in prompts:
        if prompt_token_count(prompt) > settings.API_MAX_PROMPT_TOKENS:
            raise ApiError(
                f"The prompt is {prompt_token_count(prompt)} tokens (UTF-8 bytes); this server accepts at most "
                f"{settings.API_MAX_PROMPT_TOKENS}.",
                param=param,
                code="context_length_exceeded",
            )
    if len(prompts) * data["n"] > settings.API_MAX_N:
        raise ApiError(f"At most {settings.API_MAX_N} choices per request (prompts × n).", param="n")
    depth = data["depth"]
    if depth is None and data["tol"] is None:
        depth = DEFAULT_DEPTH
    params = {
        "depth": depth,
        "tol": data["tol"],
        "warm_start": data["warm_start"],
        "solver": data["solver"],
        "temperature": data["temperature"],
        "top_p": data["top_p"],
        "seed": data["seed"],
        "stop": data["stop"],
    }
    options = data.get("stream_options") or {}
    return Plan(
        prompts=prompts,
        n=data["n"],
        max_tokens=max_tokens,
        params=params,
        stream=data["stream"],
        include_usage=bool(options.get("include_usage")),
        echo=data.get("echo", False),
        eqlm={
            "depth_requested": depth,
            "mode": "adaptive" if data["tol"] is not None else "fixed",
            "tol": data["tol"],
            "warm_start": data["warm_start"],
            "solver": data["solver"],
        },
    )


def eqlm_summary(plan: Plan, iterations: list[int], final_residual: float | None) -> dict:
    finite = final_residual is not None and math.isfinite(final_residual)
    return {
        **plan.eqlm,
        "mean_iterations": round(sum(iterations) / len(iterations), 4) if iterations else 0.0,
        "iterations_per_token": iterations,
        "final_residual": float(final_residual) if finite else None,
    }


def usage(prompt_tokens: int, completion_tokens: int) -> dict:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def sse(payload) -> bytes:
    text = payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))
    return f"data: {text}\n\n".encode()


class GenerationView(V1View):
    kind = "completion"  # or "chat"
    serializer_class: type[serializers.Serializer] = CompletionRequestSerializer

    def plan(self, data: dict) -> Plan:
        raise NotImplementedError

    def post(self, request):
        serializer = self.serializer_class(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        generator = check_model(data["model"])
        plan = self.plan(data)
        choices = len(plan.prompts) * plan.n
        reserve = sum(prompt_token_count(p) for p in plan.prompts) * plan.n + plan.max_tokens * choices
        ratelimit.admit(self.caller, reserve)
        slot = ratelimit.acquire_generation_slot()
        ident = f"{'chatcmpl' if self.kind == 'chat' else 'cmpl'}-{uuid.uuid4().hex[:24]}"
        created = int(time.time())
        if plan.stream:
            response = StreamingHttpResponse(
                self.stream_events(generator, plan, slot, ident, created), content_type="text/event-stream"
            )
            response["Cache-Control"] = "no-cache"
            response["X-Accel-Buffering"] = "no"
            return response
        try:
            body = self.complete(generator, plan, ident, created)
        finally:
            slot.release()
        return Response(body)

    # -- one JSON answer
    def complete(self, generator, plan: Plan, ident: str, created: int) -> dict:
        choices, all_iterations, prompt_tokens, completion_tokens, residual = [], [], 0, 0, None
        per_choice = []
        try:
            for index, prompt, req in plan.requests():
                result = generator.generate(req)
                iterations = [event.iterations for event in result.tokens]
                all_iterations += iterations
                prompt_tokens += result.prompt_tokens
                completion_tokens += result.completion_tokens
                residual = result.final_residual
                text = (prompt + result.text) if plan.echo else result.text
                choices.append(self.choice(index, text, result.finish_reason))
                per_choice.append(eqlm_summary(plan, iterations, result.final_residual))
        finally:
            ratelimit.charge_tokens(self.caller, prompt_tokens + completion_tokens)
        summary = eqlm_summary(plan, all_iterations, residual)
        if len(per_choice) > 1:
            for choice, own in zip(choices, per_choice, strict=True):
                choice["eqlm"] = own
        return {
            "id": ident,
            "object": "chat.completion" if self.kind == "chat" else "text_completion",
            "created": created,
            "model": generator.model_id,
            "system_fingerprint": None,
            "choices": choices,
            "usage": usage(prompt_tokens, completion_tokens),
            "eqlm": summary,
        }

    def choice(self, index: int, text: str, reason: str) -> dict:
        if self.kind == "chat":
            return {
                "index": index,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "logprobs": None,
                "finish_reason": reason,
            }
        return {"index": index, "text": text, "logprobs": None, "finish_reason": reason}

    # -- server-sent events
    def chunk(self, ident, created, model_id, plan, index, *, text=None, role=False, reason=None, eqlm=None):
        if self.kind == "chat":
            delta = {}
            if role:
                delta = {"role": "assistant", "content": ""}
            elif text is not None:
                delta = {"content": text}
            choice = {"index": index, "delta": delta, "logprobs": None, "finish_reason": reason}
            obj = "chat.completion.chunk"
        else:
            choice = {"index": index, "text": text or "", "logprobs": None, "finish_reason": reason}
            obj = "text_completion"
        body = {
            "id": ident,
            "object": obj,
            "created": created,
            "model": model_id,
            "system_fingerprint": None,
            "choices": [choice],
        }
        if plan.include_usage:
            body["usage"] = None
        if eqlm is not None:
            body["eqlm"] = eqlm
        return sse(body)

    def stream_events(self, generator, plan: Plan, slot, ident: str, created: int):
        prompt_tokens = completion_tokens = 0
        all_iterations: list[int] = []
        try:
            for index, prompt, req in plan.requests():
                if self.kind == "chat":
                    yield self.chunk(ident, created, generator.model_id, plan, index, role=True)
                elif plan.echo:
                    yield self.chunk(ident, created, generator.model_id, plan, index, text=prompt)
                prompt_tokens += prompt_token_count(prompt)
                iterations, residual = [], None
                stream = generator.stream(req)
                for event in stream:
                    iterations.append(event.iterations)
                    residual = event.residual
                    if event.text:
                        yield self.chunk(ident, created, generator.model_id, plan, index, text=event.text)
                completion_tokens += len(iterations)
                all_iterations += iterations
                reason = stream.finish_reason
                own = eqlm_summary(plan, iterations, residual)
                yield self.chunk(ident, created, generator.model_id, plan, index, reason=reason, eqlm=own)
            if plan.include_usage:
                yield sse(
                    {
                        "id": ident,
                        "object": "chat.completion.chunk" if self.kind == "chat" else "text_completion",
                        "created": created,
                        "model": generator.model_id,
                        "system_fingerprint": None,
                        "choices": [],
                        "usage": usage(prompt_tokens, completion_tokens),
                        "eqlm": eqlm_summary(plan, all_iterations, residual),
                    }
                )
            yield sse("[DONE]")
        except Exception as exc:
            log.exception("generation failed mid-stream")
            yield sse(error_body(f"Generation failed: {exc}", 500, code="generation_failed"))
            yield sse("[DONE]")
        finally:
            slot.release()
            ratelimit.charge_tokens(self.caller, prompt_tokens + completion_tokens)


# --- the endpoints ----------------------------------------------------------------------------------------------

MODEL_SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "object": {"type": "string", "enum": ["model"]},
        "created": {"type": "integer"},
        "owned_by": {"type": "string"},
    },
}


class ModelListView(V1View):
    @extend_schema(
        operation_id="v1_models_list",
        tags=["v1 (OpenAI-compatible)"],
        summary="List the models",
        responses={
            200: {
                "type": "object",
                "properties": {"object": {"type": "string"}, "data": {"type": "array", "items": MODEL_SCHEMA}},
            },
            401: ERROR_RESPONSES[401],
        },
    )  # fmt: skip
    def get(self, request):
        ratelimit.admit(self.caller, 0)
        generator = get_generator_or_503()
        return Response({"object": "list", "data": [model_object(generator.model_id)]})


class ModelDetailView(V1View):
    @extend_schema(
        operation_id="v1_models_retrieve",
        tags=["v1 (OpenAI-compatible)"],
        summary="One model",
        responses={200: MODEL_SCHEMA, 404: ERROR_RESPONSES[404]},
    )
    def get(self, request, model_id: str):
        ratelimit.admit(self.caller, 0)
        generator = check_model(model_id)
        return Response(model_object(generator.model_id))


EQLM_SCHEMA = {
    "type": "object",
    "description": "What the equilibrium solver did.",
    "properties": {
        "depth_requested": {"type": "integer", "nullable": True},
        "mode": {"type": "string", "enum": ["fixed", "adaptive"]},
        "tol": {"type": "number", "nullable": True},
        "warm_start": {"type": "boolean"},
        "solver": {"type": "string"},
        "mean_iterations": {"type": "number"},
        "iterations_per_token": {"type": "array", "items": {"type": "integer"}},
        "final_residual": {"type": "number", "nullable": True},
    },
}
USAGE_SCHEMA = {
    "type": "object",
    "properties": {k: {"type": "integer"} for k in ("prompt_tokens", "completion_tokens", "total_tokens")},
}


def completion_response_schema(kind: str) -> dict:
    choice = (
        {"message": {"type": "object", "properties": {"role": {"type": "string"}, "content": {"type": "string"}}}}
        if kind == "chat"
        else {"text": {"type": "string"}}
    )
    return {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "object": {"type": "string"},
            "created": {"type": "integer"},
            "model": {"type": "string"},
            "choices": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "index": {"type": "integer"},
                        **choice,
                        "finish_reason": {"type": "string", "enum": ["stop", "length"]},
                    },
                },
            },
            "usage": USAGE_SCHEMA,
            "eqlm": EQLM_SCHEMA,
        },
    }


class CompletionView(GenerationView):
    kind = "completion"
    serializer_class = CompletionRequestSerializer

    def plan(self, data):
        return build_plan(data, data["prompt"], COMPLETIONS_DEFAULT_MAX_TOKENS, "prompt")

    @extend_schema(
        operation_id="v1_completions_create",
        tags=["v1 (OpenAI-compatible)"],
        summary="Continue a prompt",
        description="OpenAI's legacy completions. With stream: true the answer is text/event-stream.",
        request=CompletionRequestSerializer,
        responses={200: completion_response_schema("completion"), **ERROR_RESPONSES},
        examples=[
            OpenApiExample(
                "Depth 12, greedy",
                value={
                    "model": "eqlm-demo",
                    "prompt": "In the beginning",
                    "max_tokens": 32,
                    "temperature": 0,
                    "depth": 12,
                },
                request_only=True,
            )  # fmt: skip
        ],
    )
    def post(self, request):
        return super().post(request)


class ChatCompletionView(GenerationView):
    kind = "chat"
    serializer_class = ChatCompletionRequestSerializer

    def plan(self, data):
        return build_plan(data, [chat_prompt(data["messages"])], CHAT_DEFAULT_MAX_TOKENS, "messages")

    @extend_schema(
        operation_id="v1_chat_completions_create",
        tags=["v1 (OpenAI-compatible)"],
        summary="Answer a conversation",
        description="The demo model is not instruction-tuned: message contents are joined into plain text to "
        "continue. With stream: true the answer is text/event-stream.",
        request=ChatCompletionRequestSerializer,
        responses={200: completion_response_schema("chat"), **ERROR_RESPONSES},
    )
    def post(self, request):
        return super().post(request)


@csrf_exempt
def not_found(request, *args, **kwargs):
    """Any other /v1/ path: a 404 in the API's error shape, not the HTML page."""
    from django.http import JsonResponse

    body = error_body(f"Unknown API route: {request.method} {request.path}", 404, code="unknown_url")
    return JsonResponse(body, status=404)
