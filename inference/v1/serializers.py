"""Request serializers for /v1/: they validate a request and are its OpenAPI schema (OpenAI's fields, then EqLM's)."""

import json
from pathlib import Path

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from eqlm.council import MAX_MAX_ITER, Kinetic
from eqlm.council import MEMORIES as COUNCIL_MEMORIES
from eqlm.council import MEMORY_DEFAULTS as COUNCIL_MEMORY_DEFAULTS
from eqlm.council import POOLS as COUNCIL_POOLS
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
from eqlm.model_files import ONNX
from inference.model_ids import COUNCIL_ID, base_id, suffix_pairs
from portal.api import ApiError

from .plan import TokenIds


def default_model_depths() -> tuple[int, int]:
    """(default_depth, max_depth) of the default model, from the manifest the server serves it by (eqlm.limits);
    the limits' fallbacks where no manifest is installed."""
    path = Path(settings.MODELS_DIR) / settings.DEFAULT_MODEL / ONNX / "manifest.json"
    try:
        return model_depths(json.loads(path.read_text()))
    except (OSError, ValueError):
        return DEFAULT_DEPTH, DEPTH_MAX


MAX_TOP_LOGPROBS = 20
# The council's default members: the KJV equilibrium model and the second-domain (code) model; never the unrolled one.
# They are the members the council bench measured and tuned the defaults on (fixtures/council_bench.json): the KJV one
# is the six-stage model, eqlm-demo until the experiments' winner took that id. Another member is a new bench run first.
DEFAULT_MEMBERS = ("eqlm-demo-anytime", "eqlm-code")
MAX_MEMBERS = 8
CONTROL_CAP = 1e6  # beta and tau beyond this only overflow; the game is already routing / pinned there
BARE = Kinetic()  # the council's controls without memory: eqlm.council's defaults


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


def _at(index: int, message: str) -> list:
    """A list-shaped error for item `index` (the shared error shape names it `kinetic.members[index]`)."""
    return [[] for _ in range(index)] + [[message]]


@extend_schema_field({"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": MAX_MEMBERS})
class MembersField(serializers.Field):
    def to_internal_value(self, data) -> list[str]:
        if not isinstance(data, list):
            raise serializers.ValidationError("Expected a list of model ids.")
        if not 2 <= len(data) <= MAX_MEMBERS:
            raise serializers.ValidationError(f"A council has 2 to {MAX_MEMBERS} members (repeats allowed).")
        for index, item in enumerate(data):
            if not isinstance(item, str) or not item or len(item) > 100:
                raise serializers.ValidationError(_at(index, "Expected a model id (a string of 1-100 characters)."))
            if item == COUNCIL_ID:
                raise serializers.ValidationError(_at(index, "The council cannot be its own member."))
        return list(data)

    def to_representation(self, value):
        return value


class KineticSerializer(serializers.Serializer):
    """The council's controls (only with `model: "eqlm-council"`)."""

    members = MembersField(
        required=False,
        help_text=f"Ids of servable models, 2–{MAX_MEMBERS}, repeats allowed (default: {', '.join(DEFAULT_MEMBERS)}).",
    )
    tau = serializers.FloatField(
        required=False,
        default=BARE.tau,
        min_value=0.0,
        max_value=CONTROL_CAP,
        help_text="Pull toward the reference (≥ 0).",
    )
    beta = serializers.FloatField(
        required=False, default=None, min_value=0.0, max_value=CONTROL_CAP,
        help_text=(
            "Influence sharpness (≥ 0): 0 is logit averaging, large approaches routing (default: "
            f"{COUNCIL_MEMORY_DEFAULTS['beta']} with memory, {BARE.beta} without)."
        ),
    )  # fmt: skip
    eta = PositiveFloatField(
        required=False, default=BARE.eta, max_value=1.0, help_text="Step size of the update, in (0, 1]."
    )
    max_iter = serializers.IntegerField(
        required=False, default=BARE.max_iter, min_value=1, max_value=MAX_MAX_ITER,
        help_text=f"Most game iterations per token (1–{MAX_MAX_ITER}).",
    )  # fmt: skip
    tol = PositiveFloatField(
        required=False, default=BARE.tol, help_text="Stop once y moves less than this in L1 (> 0)."
    )
    reference = serializers.CharField(
        required=False, default=BARE.reference, max_length=100,
        help_text='"mean" (the mean of the members\' distributions) or a member id.',
    )  # fmt: skip
    memory = serializers.ChoiceField(
        choices=list(COUNCIL_MEMORIES), required=False, default=COUNCIL_MEMORY_DEFAULTS["memory"],
        help_text=(
            '"fixed_share": each member\'s reputation, its fixed-share posterior from its log-probabilities of the '
            'text so far, weighs its influence; "none": the game on the current position alone.'
        ),
    )  # fmt: skip
    share = serializers.FloatField(
        required=False, default=COUNCIL_MEMORY_DEFAULTS["share"], min_value=0.0,
        help_text="The memory's switching rate, in [0, 1): the share of reputation passed on after each byte.",
    )  # fmt: skip
    learning_rate = PositiveFloatField(
        required=False, default=COUNCIL_MEMORY_DEFAULTS["learning_rate"], max_value=CONTROL_CAP,
        help_text="The weight of each byte's evidence in the memory's update (> 0; 1 is Bayes' rule).",
    )  # fmt: skip
    pool = serializers.ChoiceField(
        choices=list(COUNCIL_POOLS), required=False, default=None,
        help_text=(
            '"geometric": y ∝ exp(Σ w_i l_i) p_ref^τ (log-linear); "arithmetic": y = Σ w_i p_i, the weighted mean of '
            f'the distributions (default: "{COUNCIL_MEMORY_DEFAULTS["pool"]}" with memory, "{BARE.pool}" without).'
        ),
    )  # fmt: skip

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                known = ", ".join(self.fields)
                raise serializers.ValidationError({unknown[0]: [f"Not a control; the controls: {known}."]})
        return super().to_internal_value(data)

    def validate_share(self, value):
        if not value < 1:
            raise serializers.ValidationError("Must be in [0, 1).")
        return value

    def validate(self, attrs):
        if attrs["beta"] is None:
            attrs["beta"] = COUNCIL_MEMORY_DEFAULTS["beta"] if attrs["memory"] != "none" else BARE.beta
        if attrs["pool"] is None:
            attrs["pool"] = COUNCIL_MEMORY_DEFAULTS["pool"] if attrs["memory"] != "none" else BARE.pool
        members = attrs.get("members") or list(DEFAULT_MEMBERS)
        if attrs["reference"] != "mean" and attrs["reference"] not in members:
            raise serializers.ValidationError({"reference": ['Must be "mean" or one of the members.']})
        attrs["members"] = members
        return attrs


def kinetic_field() -> KineticSerializer:
    return KineticSerializer(
        required=False, allow_null=True, default=None,
        help_text=f'The council\'s controls; only with model "{COUNCIL_ID}".',
    )  # fmt: skip


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
    """The EqLM controls a model id names (inference/model_ids.py), validated like the body fields; {} without."""
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
