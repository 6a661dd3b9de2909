"""The council on /v1/ (`eqlm-council`): the `kinetic` object, its members' runtimes and the `eqlm.council` telemetry.

Each member is a servable model (inference.serving.resolve_model) decoded by its own ONNX runtime with the request's
depth/tol/warm start/solver; eqlm.council solves the game per token. The views call four small hooks:
`generator_for` (the council's generator, or None for a plain model), `model_object` (its /v1/models entry),
`add_to_summary` (a JSON answer's `eqlm.council`) and `on_event`/`close_stream` (each streamed chunk's entries).
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from portal.api import ApiError

COUNCIL_ID = "eqlm-council"
# The KJV equilibrium model and the second-domain (code) model; never the unrolled model.
DEFAULT_MEMBERS = ("eqlm-demo", "eqlm-code")
MAX_MEMBERS = 8
CONTROL_CAP = 1e6  # beta and tau beyond this only overflow; the game is already routing / pinned there


@extend_schema_field({"type": "number", "minimum": 0, "exclusiveMinimum": True})
class _PositiveFloat(serializers.FloatField):
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
        required=False, default=0.0, min_value=0.0, max_value=CONTROL_CAP, help_text="Pull toward the reference (≥ 0)."
    )
    beta = serializers.FloatField(
        required=False, default=2.0, min_value=0.0, max_value=CONTROL_CAP,
        help_text="Influence sharpness (≥ 0): 0 is logit averaging, large approaches routing.",
    )  # fmt: skip
    eta = _PositiveFloat(required=False, default=0.5, max_value=1.0, help_text="Step size of the update, in (0, 1].")
    max_iter = serializers.IntegerField(
        required=False, default=32, min_value=1, max_value=256, help_text="Most game iterations per token (1–256)."
    )
    tol = _PositiveFloat(required=False, default=1e-5, help_text="Stop once y moves less than this in L1 (> 0).")
    reference = serializers.CharField(
        required=False, default="mean", max_length=100,
        help_text='"mean" (the mean of the members\' distributions) or a member id.',
    )  # fmt: skip

    def validate(self, attrs):
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


def _member_runtimes(members: list[str]) -> list:
    from inference.serving import ModelUnavailable, UnknownModel, resolve_model

    runtimes = []
    for index, member in enumerate(members):
        try:
            runtimes.append(resolve_model(member)[0])
        except UnknownModel as exc:
            raise ApiError(str(exc), param=f"kinetic.members[{index}]", code="model_not_found")
        except ModelUnavailable as exc:
            raise ApiError(
                f"The member '{member}' is unavailable on this server: {exc}",
                status_code=503,
                param=f"kinetic.members[{index}]",
                code="model_unavailable",
            )
    return runtimes


def generator_for(data: dict):
    """The council generator for a request to eqlm-council, None for any other model (which may not take kinetic)."""
    kinetic = data.get("kinetic")
    if not is_council_id(data["model"]):
        if kinetic is not None:
            raise ApiError(f'kinetic is only for the model "{COUNCIL_ID}".', param="kinetic")
        return None
    from eqlm.council import CouncilGenerator, Kinetic

    if kinetic is None:
        kinetic = KineticSerializer(data={})
        kinetic.is_valid(raise_exception=True)
        kinetic = kinetic.validated_data
    members = list(kinetic["members"])
    reference = kinetic["reference"]
    controls = Kinetic(
        beta=kinetic["beta"],
        tau=kinetic["tau"],
        eta=kinetic["eta"],
        max_iter=kinetic["max_iter"],
        tol=kinetic["tol"],
        reference="mean" if reference == "mean" else members.index(reference),
    )
    generator = CouncilGenerator(_member_runtimes(members), controls, model_id=COUNCIL_ID)
    generator.member_ids = members
    generator.kinetic_json = {**kinetic, "members": members}
    return generator


def is_council_id(model_id: str) -> bool:
    """Whether a model id (a configuration suffix such as `@depth=12` included) names the council."""
    from .scoring import split_model_id

    return split_model_id(model_id)[0] == COUNCIL_ID


def is_council(generator) -> bool:
    return getattr(generator, "member_ids", None) is not None


def model_object(created: int) -> dict:
    """The /v1/models entry of the council, with its default members."""
    return {
        "id": COUNCIL_ID,
        "object": "model",
        "created": created,
        "owned_by": "eqlm-portal",
        "members": list(DEFAULT_MEMBERS),
        "eqlm": {"name": "Live council (equilibrium of an influence game)", "default": False},
    }


def token_entry(members: list[str], index: int, token: int, text: str, entry) -> dict:
    return {"index": index, "token": int(token), "text": text, **entry.as_json(members)}


def council_object(generator, entries: list[dict]) -> dict:
    iterations = [e["iterations"] for e in entries]
    return {
        "members": generator.member_ids,
        "kinetic": generator.kinetic_json,
        "mean_iterations": round(sum(iterations) / len(iterations), 4) if iterations else 0.0,
        "converged_fraction": round(sum(e["converged"] for e in entries) / len(entries), 4) if entries else None,
        "tokens": entries,
    }


def result_entries(generator, result, choice: int = 0) -> list[dict]:
    """The council entries of a finished generation's tokens ([] for a plain model)."""
    if not is_council(generator):
        return []
    pairs = enumerate(zip(result.tokens, result.entries, strict=True))
    members = generator.member_ids
    return [{"choice": choice, **token_entry(members, k, ev.token_id, ev.text, e)} for k, (ev, e) in pairs]


def add_to_summary(summary: dict, generator, entries: list[dict]) -> dict:
    """Adds `council` to an `eqlm` object (nothing for a plain model)."""
    if is_council(generator):
        summary["council"] = council_object(generator, entries)
    return summary


def on_event(generator, stream, event) -> dict | None:
    """Track one streamed event; returns the `eqlm` object for its chunk (the entries not yet sent) or None."""
    if not is_council(generator):
        return None
    state = stream.stats.__dict__.setdefault("_council_wire", {"emitted": 0, "pending": []})
    k = state["emitted"]
    state["emitted"] += 1
    entry = stream.stats.entries[k]
    state["pending"].append(token_entry(generator.member_ids, k, event.token_id, event.text, entry))
    if not event.text:
        return None
    pending, state["pending"] = state["pending"], []
    return {"council": {"members": generator.member_ids, "tokens": pending}}


def close_stream(summary: dict, generator, stream) -> dict:
    """The closing chunk's `eqlm`: its council carries the entries not yet sent (tokens without text of their own)."""
    if not is_council(generator):
        return summary
    state = stream.stats.__dict__.get("_council_wire", {"emitted": 0, "pending": []})
    emitted = state["emitted"]
    stats = stream.stats
    sent_iterations = [e.iterations for e in stats.entries[:emitted]]
    summary["council"] = {
        "members": generator.member_ids,
        "kinetic": generator.kinetic_json,
        "mean_iterations": round(sum(sent_iterations) / emitted, 4) if emitted else 0.0,
        "converged_fraction": round(sum(e.converged for e in stats.entries[:emitted]) / emitted, 4)
        if emitted
        else None,
        "tokens": state["pending"],
    }
    return summary
