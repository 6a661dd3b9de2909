"""Request serializers for /v1/: they validate a request and are its OpenAPI schema (OpenAI's fields, then EqLM's)."""

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

DEPTH_MIN, DEPTH_MAX = 1, 64
DEFAULT_DEPTH = 8


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
        help_text=f"EqLM: iterations of the weight-tied block per token, {DEPTH_MIN}–{DEPTH_MAX} (default: the "
        f"model's default_depth, {DEFAULT_DEPTH} for eqlm-demo; with `tol`, the cap on iterations, {DEPTH_MAX} when "
        "unset).",
    )  # fmt: skip
    tol = PositiveFractionField(
        required=False, allow_null=True, default=None, max_value=1.0,
        help_text="EqLM: adaptive halting. Each position stops iterating once its relative residual "
        f"‖f(z)−z‖/‖z‖ falls below tol (> 0), or at `depth` (default {DEPTH_MAX}). Without tol, depth is fixed.",
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
        from .council import kinetic_field  # the council's controls (inference/v1/council.py)

        fields["kinetic"] = kinetic_field()
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
