"""The field types of /v1's request serializers: the prompt union, stop sequences, positive numbers, message
content (each its own OpenAPI schema)."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from .plan import TokenIds


@extend_schema_field(
    {
        "oneOf": [
            {"type": "string"},
            {"type": "array", "items": {"type": "string"}},
            {"type": "array", "items": {"type": "integer", "minimum": 0}},
            {"type": "array", "items": {"type": "array", "items": {"type": "integer", "minimum": 0}}},
        ],
        "description": "Text to continue: a string, a list of strings (one completion each), token ids, or a list of "
        "such lists. Token ids are the model's (GET /tokenizer_info: UTF-8 bytes 0-255, or GPT-2 BPE 0-50256), never "
        "re-encoded: for a byte model [195] is one token.",
    }
)
class PromptField(serializers.Field):
    """OpenAI's prompt union; strings stay text, token-id lists become plan.TokenIds (the exact tokens to score),
    checked against the model's vocabulary once the model is known (plan.check_token_ids)."""

    @staticmethod
    def _is_ids(item) -> bool:
        if not (isinstance(item, list) and item):
            return False
        return all(isinstance(t, int) and not isinstance(t, bool) for t in item)

    @staticmethod
    def _as_ids(ids: list[int]) -> TokenIds:
        bad = next((t for t in ids if t < 0), None)
        if bad is not None:
            raise serializers.ValidationError(f"Token ids are integers from 0 (got {bad}).")
        return TokenIds(ids)

    def to_internal_value(self, data) -> list[str | TokenIds]:
        if isinstance(data, str):
            return [data]
        if isinstance(data, list) and data and all(isinstance(item, str) for item in data):
            return list(data)
        if self._is_ids(data):
            return [self._as_ids(data)]
        if isinstance(data, list) and data and all(self._is_ids(item) for item in data):
            return [self._as_ids(item) for item in data]
        raise serializers.ValidationError(
            "Expected a string, a non-empty list of strings, a list of token ids, or a list of token-id lists."
        )

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


@extend_schema_field({"type": "number", "minimum": 0, "exclusiveMinimum": True})
class PositiveFloatField(serializers.FloatField):
    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not value > 0:
            raise serializers.ValidationError("Must be greater than 0.")
        return value


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
