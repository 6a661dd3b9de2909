"""The council's controls on /v1 (`kinetic`, only with the council's model id): members and the game's settings,
their defaults read from eqlm.council."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from eqlm.council_game import MAX_MAX_ITER, Kinetic
from eqlm.council_game import MEMORIES as COUNCIL_MEMORIES
from eqlm.council_game import MEMORY_DEFAULTS as COUNCIL_MEMORY_DEFAULTS
from eqlm.council_game import POOLS as COUNCIL_POOLS
from models_app.model_ids import COUNCIL_ID

from .fields import PositiveFloatField

# The council's default members: the KJV equilibrium model and the second-domain (code) model; never the unrolled one.
# They are the members the council bench measured and tuned the defaults on (fixtures/council_bench.json): the KJV one
# is the six-stage model, eqlm-demo until the experiments' winner took that id. Another member is a new bench run first.
DEFAULT_MEMBERS = ("eqlm-demo-anytime", "eqlm-code")
MAX_MEMBERS = 8
CONTROL_CAP = 1e6  # beta and tau beyond this only overflow; the game is already routing / pinned there
BARE = Kinetic()  # the council's controls without memory: eqlm.council's defaults


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
