"""Request serializers for /v1/: they validate a request and are its OpenAPI schema (OpenAI's fields, then EqLM's)."""

import json
from pathlib import Path

from django.conf import settings
from rest_framework import serializers

from eqlm.limits import (
    DEFAULT_DEPTH,
    DEFAULT_HALT,
    DEFAULT_MODEL_ID,
    DEFAULT_SOLVER,
    DEFAULT_START,
    DEPTH_CAP_MAX,
    DEPTH_MAX,
    DEPTH_MIN,
    HALTS,
    SOLVERS,
    STARTS,
    model_depths,
)
from eqlm.logprobs import MAX_TOP_LOGPROBS
from eqlm.manifest import PRECISIONS
from eqlm.model_files import ONNX
from models_app.model_ids import base_id, suffix_pairs
from portal.api import ApiError

from .fields import (
    MessageContentField,
    PositiveFractionField,
    PromptField,
    StopField,
    StreamOptionsSerializer,
)
from .kinetic import kinetic_field


def default_model_depths() -> tuple[int, int]:
    """(default_depth, max_depth) of the default model, from the manifest the server serves it by (eqlm.limits);
    the limits' fallbacks where no manifest is installed."""
    path = Path(settings.MODELS_DIR) / settings.DEFAULT_MODEL / ONNX / "manifest.json"
    try:
        return model_depths(json.loads(path.read_text()))
    except (OSError, ValueError):
        return DEFAULT_DEPTH, DEPTH_MAX


class GenerationParamsSerializer(serializers.Serializer):
    """Fields shared by /v1/completions and /v1/chat/completions (OpenAI's, then EqLM's)."""

    model = serializers.CharField(help_text="The model id from /v1/models (`eqlm-demo`).")
    temperature = serializers.FloatField(
        required=False, allow_null=True, default=1.0, min_value=0.0, max_value=2.0,
        help_text="0 is greedy (deterministic).",
    )  # fmt: skip
    top_p = serializers.FloatField(
        required=False, allow_null=True, default=1.0, min_value=0.0, max_value=1.0,
        help_text="Nucleus sampling: in (0, 1]; 1 keeps every token.",
    )  # fmt: skip
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
        required=False, allow_null=True, default=None, min_value=DEPTH_MIN, max_value=DEPTH_CAP_MAX,
        help_text=f"EqLM: iterations of the weight-tied block per token, {DEPTH_MIN} to the model's max_depth "
        f"({DEPTH_MAX} unless its manifest declares another, at most {DEPTH_CAP_MAX}; /v1/models lists each "
        f"model's). Default: the model's default_depth ({default_model_depths()[0]} for {DEFAULT_MODEL_ID}, read from "
        "its manifest as the server does); with `tol`, the cap "
        "on iterations, the model's max_depth when unset. An explicit transformer (explicit-demo) takes only its layer "
        "count, and none of tol, start, halt, warm_start or a solver but picard (each a 400).",
    )  # fmt: skip
    tol = PositiveFractionField(
        required=False, allow_null=True, default=None, max_value=1.0,
        help_text="EqLM: adaptive halting. Each position stops iterating once the `halt` rule holds: its relative "
        "residual ‖f(z)−z‖/‖z‖ below tol (> 0), or with `halt: \"kl\"` the KL between successive iterations' "
        "next-byte distributions below tol (nats); at the latest at `depth` (default: the model's max_depth). "
        "Without tol, depth is fixed.",
    )  # fmt: skip
    start = serializers.ChoiceField(
        choices=list(STARTS), required=False, allow_null=True, default=None,
        help_text='EqLM: where each new position\'s solve starts. "zero" (the default): z = 0; "warm": the '
        "previous position's final state, iterating against the solved states of the positions before it; "
        '"noise": N(0, 1), the portable generator the manifest names (`noise_rng`), seeded by `seed` (0 when '
        "unset, which then seeds sampling too; choice i of n uses seed + i).",
    )  # fmt: skip
    halt = serializers.ChoiceField(
        choices=list(HALTS), required=False, allow_null=True, default=DEFAULT_HALT,
        help_text='EqLM: the halting rule `tol` applies (only with tol): "residual" (the relative residual) or '
        '"kl" (KL(p_i ‖ p_(i−1)) of the next-byte distributions before and after an iteration, in nats).',
    )  # fmt: skip
    warm_start = serializers.BooleanField(
        required=False, allow_null=True, default=None,
        help_text='EqLM: the older spelling of `start`: true is start "warm". Sent with a `start` it disagrees '
        "with, it is a 400.",
    )  # fmt: skip
    solver = serializers.ChoiceField(
        choices=list(SOLVERS), required=False, allow_null=True, default=DEFAULT_SOLVER,
        help_text="EqLM: fixed-point solver.",
    )  # fmt: skip
    precision = serializers.ChoiceField(
        choices=list(PRECISIONS), required=False, allow_null=True, default=None,
        help_text='EqLM: the weights that answer: "fp32" (the default) or "int8", where the model\'s export has int8 '
        "graphs (its controls list `precisions`; any other model answers int8 with a 400). int8 reads a quarter of "
        "the bytes per token; the model card states how far its log-probabilities are from fp32's.",
    )  # fmt: skip

    def validate_top_p(self, value):
        if value is not None and value <= 0:
            raise serializers.ValidationError("Ensure this value is greater than 0 (1 keeps every token).")
        return value

    def get_fields(self):
        fields = super().get_fields()
        cap = settings.API_MAX_TOKENS
        for name in ("max_tokens", "max_completion_tokens"):
            fields[name] = serializers.IntegerField(
                required=False, allow_null=True, default=None, min_value=1, max_value=cap,
                help_text=f"Most tokens (the model's: UTF-8 bytes or GPT-2 BPE) to generate, 1–{cap} on this server.",
            )  # fmt: skip
        fields["n"] = serializers.IntegerField(
            required=False, allow_null=True, default=1, min_value=1, max_value=settings.API_MAX_N,
            help_text="Choices to generate.",
        )  # fmt: skip
        fields["kinetic"] = kinetic_field()
        return fields

    NULL_MEANS_DEFAULT = {
        "temperature": 1.0,
        "top_p": 1.0,
        "stream": False,
        "halt": DEFAULT_HALT,
        "solver": DEFAULT_SOLVER,
        "n": 1,
    }

    def validate(self, attrs):
        """An explicit null is OpenAI's "use the default" (clients send it for unset optional fields)."""
        for name, default in self.NULL_MEANS_DEFAULT.items():
            if attrs.get(name) is None:
                attrs[name] = default
        attrs["stop"] = attrs.get("stop") or ()
        conflict = start_conflict(attrs.get("start"), attrs.get("warm_start"))
        if conflict:
            raise serializers.ValidationError({"warm_start": [conflict]})
        return attrs


def start_conflict(start: str | None, warm_start: bool | None) -> str:
    """Why `start` and its older spelling `warm_start` disagree ("" when they do not, or one is unset)."""
    if start is None or warm_start is None or warm_start == (start == "warm"):
        return ""
    return (
        f"warm_start is {str(warm_start).lower()} but start is {start!r}: send start alone "
        '(warm_start: true is start: "warm").'
    )


def resolve_start_and_halt(data: dict) -> dict:
    """Settle the solve's start and halting rule once the body and the model id's suffix are merged.

    `start` falls back on `warm_start` (true: "warm"), then "zero"; `warm_start` follows `start`. The noise start
    is always seeded: an unset seed is 0. `halt: "kl"` only means something with a tol.
    """
    conflict = start_conflict(data.get("start"), data.get("warm_start"))
    if conflict:
        raise ApiError(conflict, param="warm_start", code="conflicting_parameter")
    start = data.get("start") or ("warm" if data.get("warm_start") else DEFAULT_START)
    data["start"], data["warm_start"] = start, start == "warm"
    if start == "noise" and data.get("seed") is None:
        data["seed"] = 0
    data["halt"] = data.get("halt") or DEFAULT_HALT
    if data["halt"] != DEFAULT_HALT and data.get("tol") is None:
        raise ApiError(
            f'halt "{data["halt"]}" is a halting rule for adaptive halting: send a tol with it (without tol '
            "every token runs exactly `depth` iterations).",
            param="halt",
        )
    return data


def parse_suffix(model_id: str) -> dict:
    """The EqLM controls a model id names (models_app/model_ids.py), validated like the body fields; {} without."""
    raw = suffix_pairs(model_id)
    if not raw:
        return {}
    serializer = GenerationParamsSerializer(data={"model": base_id(model_id), **raw}, partial=True)
    if not serializer.is_valid():
        key, messages = next(iter(serializer.errors.items()))
        message = messages[0] if isinstance(messages, list) else messages
        raise ApiError(
            f"The model id suffix's {key}={raw.get(key)!r} is invalid: {message}",
            param="model",
            code="invalid_model_suffix",
        )
    return {key: serializer.validated_data[key] for key in raw}


def merge_suffix(data: dict, body: dict) -> dict:
    """Fold the model id's controls into validated request data; a body field that disagrees is a 400. The start and
    halting rule are settled afterwards (resolve_start_and_halt), once the model has checked what it takes."""
    controls = parse_suffix(data["model"])
    for key, value in controls.items():
        sent = body.get(key) if isinstance(body, dict) else None
        if sent is not None and data.get(key) != value:
            raise ApiError(
                f"'{key}' is {data.get(key)!r} in the body but {value!r} in the model id suffix; send it once.",
                param=key,
                code="conflicting_parameter",
            )
        data[key] = value
    return data


class CompletionRequestSerializer(GenerationParamsSerializer):
    prompt = PromptField(help_text="Text to continue.")
    echo = serializers.BooleanField(
        required=False, allow_null=True, default=False,
        help_text="Prefix each choice with its prompt (and, with `logprobs`, the prompt tokens' log probabilities; "
        "the first is null). With `max_tokens: 0` the prompt alone is scored.",
    )  # fmt: skip
    logprobs = serializers.IntegerField(
        required=False, allow_null=True, default=None, min_value=0, max_value=MAX_TOP_LOGPROBS,
        help_text="Return each token's log probability and the `logprobs` most likely alternatives (0–20), at the "
        "requested depth/tol/solver/warm start.",
    )  # fmt: skip

    def get_fields(self):
        fields = super().get_fields()
        cap = settings.API_MAX_TOKENS
        fields["max_tokens"] = serializers.IntegerField(
            required=False, allow_null=True, default=None, min_value=0, max_value=cap,
            help_text=f"Most tokens (the model's: UTF-8 bytes or GPT-2 BPE) to generate, 0–{cap} on this server (0 "
            "only with echo: score the prompt alone).",
        )  # fmt: skip
        return fields

    def validate(self, attrs):
        attrs = super().validate(attrs)
        attrs["echo"] = bool(attrs.get("echo"))
        if attrs.get("max_tokens") == 0 and not attrs["echo"]:
            raise serializers.ValidationError({"max_tokens": "max_tokens 0 needs echo: true (score the prompt alone)."})
        return attrs


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
    logprobs = serializers.BooleanField(
        required=False, allow_null=True, default=False,
        help_text="Return each generated token's log probability (`choices[].logprobs.content`).",
    )  # fmt: skip
    top_logprobs = serializers.IntegerField(
        required=False, allow_null=True, default=None, min_value=0, max_value=MAX_TOP_LOGPROBS,
        help_text="With `logprobs: true`, the most likely alternatives per token (0–20).",
    )  # fmt: skip

    def validate(self, attrs):
        attrs = super().validate(attrs)
        attrs["logprobs"] = bool(attrs.get("logprobs"))
        if attrs.get("top_logprobs") is not None and not attrs["logprobs"]:
            raise serializers.ValidationError({"top_logprobs": "top_logprobs needs logprobs: true."})
        return attrs
