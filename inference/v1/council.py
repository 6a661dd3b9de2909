"""The council on /v1/ (`eqlm-council`): its members' runtimes and its telemetry, chosen per request.

Each member is a servable model (models_app.serving.resolve) decoded by its own ONNX runtime with the request's
depth/tol/warm start/solver (not the noise start or the KL rule: `check_controls` refuses them); eqlm.council solves
the game per token. `serve` picks a request's generator and its
Telemetry: a plain model's reports nothing beyond the `eqlm` summary, the council's (CouncilTelemetry) adds
`eqlm.council` to JSON answers, and per stream (CouncilStreamTelemetry) to each chunk. The `kinetic` serializer is
in serializers.py, the council's id in models_app/model_ids.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from eqlm.council import council_refuses, member_refuses
from eqlm.limits import DEFAULT_HALT, DEFAULT_START, DEPTH_MAX
from eqlm.manifest import DEFAULT_PRECISION
from models_app.model_ids import COUNCIL_ID, is_council_id
from portal.api import ApiError

from .kinetic import DEFAULT_MEMBERS, KineticSerializer


def _member_runtimes(members: list[str]) -> list:
    """Each member's runtime; a 400 naming kinetic.members[i] for an unknown id or a model that cannot be a member
    (an explicit transformer: eqlm.council.member_refuses says why), a 503 for one whose files cannot be loaded."""
    from models_app.serving import ModelUnavailable, UnknownModel, resolve

    runtimes = []
    for index, member in enumerate(members):
        try:
            card = resolve(member)
            why = member_refuses(card.manifest)
            if why:
                raise ApiError(
                    f"The model '{member}' cannot be a council member: {why}.",
                    param=f"kinetic.members[{index}]",
                    code="invalid_member",
                )
            runtimes.append(card.runtime())
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


def check_controls(data: dict) -> None:
    """A 400 naming `start` or `halt` when the council cannot take it (eqlm.council.council_refuses says why)."""
    for param, why in (
        ("start", council_refuses(data.get("start") or DEFAULT_START, DEFAULT_HALT)),
        ("halt", council_refuses(DEFAULT_START, data.get("halt") or DEFAULT_HALT)),
    ):
        if why:
            raise ApiError(f"{why[0].upper()}{why[1:]}.", param=param, code="unsupported_by_council")
    if (data.get("precision") or DEFAULT_PRECISION) != DEFAULT_PRECISION:
        raise ApiError(
            f"The council runs its members at {DEFAULT_PRECISION}; precision={data['precision']!r} is for one model.",
            param="precision",
            code="unsupported_by_council",
        )


def default_max_depth() -> int:
    """The deepest depth every default member takes: the cap of a council that names no members."""
    from models_app.serving import UnknownModel, resolve

    caps = []
    for member in DEFAULT_MEMBERS:
        try:
            caps.append(resolve(member).max_depth)
        except UnknownModel:
            continue
    return min(caps, default=DEPTH_MAX)


def serve(data: dict, plain_runtime):
    """(generator, telemetry) for a validated request: the council's for eqlm-council, else `plain_runtime(id)`'s
    runtime with the plain telemetry (a plain model may not take `kinetic`)."""
    kinetic = data.get("kinetic")
    if not is_council_id(data["model"]):
        if kinetic is not None:
            raise ApiError(f'kinetic is only for the model "{COUNCIL_ID}".', param="kinetic")
        return plain_runtime(data["model"]), PLAIN
    check_controls(data)
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
        memory=kinetic["memory"],
        share=kinetic["share"],
        pool=kinetic["pool"],
        learning_rate=kinetic["learning_rate"],
    )
    runtimes = _member_runtimes(members)
    try:
        generator = CouncilGenerator(runtimes, controls, model_id=COUNCIL_ID)
    except ValueError as exc:  # members the game cannot mix: another tokenizer or vocabulary
        if not str(exc).startswith("kinetic.members"):
            raise
        raise ApiError(f"{exc}.", param="kinetic.members", code="invalid_member") from None
    return generator, CouncilTelemetry(members, {**kinetic, "members": members})


def council_defaults() -> dict:
    """The controls a request that names none gets (the serializer's defaults, read from it)."""
    defaults = KineticSerializer(data={})
    defaults.is_valid(raise_exception=True)
    return {k: v for k, v in defaults.validated_data.items() if k != "members"}


def model_object(created: int) -> dict:
    """The /v1/models entry of the council, with its default members."""
    return {
        "id": COUNCIL_ID,
        "object": "model",
        "created": created,
        "owned_by": "eqlm-portal",
        "members": list(DEFAULT_MEMBERS),
        "eqlm": {
            "name": "Live council (equilibrium of an influence game)",
            "default": False,
            "kinetic_defaults": council_defaults(),
        },
    }


# --- telemetry: what a request reports beyond the `eqlm` summary ----------------------------------------------------


class StreamTelemetry:
    """One streamed choice's telemetry: what each chunk and the closing chunk add (nothing, for a plain model)."""

    def on_event(self, event) -> dict | None:
        """Track one streamed event; returns the `eqlm` object for its chunk, or None."""
        return None

    def close(self, summary: dict) -> dict:
        """The closing chunk's `eqlm`, from the choice's summary."""
        return summary

    @property
    def entries(self) -> list[dict]:
        """The per-token entries of every event seen so far (none, for a plain model)."""
        return []


class Telemetry:
    """A request's telemetry beyond the `eqlm` summary; this base is a plain model's, which adds nothing."""

    def result_entries(self, result, choice: int = 0) -> list[dict]:
        """Per-token entries of a finished generation."""
        return []

    def add_to_summary(self, summary: dict, entries: list[dict]) -> dict:
        """An `eqlm` object with this telemetry added (entries: those of the tokens it covers)."""
        return self.label(summary)

    def label(self, summary: dict, entries: list[dict] | None = None) -> dict:
        """An `eqlm` summary with its figures named for what they count (entries: the tokens' telemetry entries)."""
        return summary

    def follow(self, stream) -> StreamTelemetry:
        """The telemetry of one streamed choice."""
        return StreamTelemetry()


PLAIN = Telemetry()


def _members_mean(entry: dict) -> float | int:
    """One token's block iterations: the mean over the council's members (a whole number when they agree)."""
    counts = [member["iterations"] for member in entry["members"]]
    mean = sum(counts) / len(counts)
    return int(mean) if mean == int(mean) else round(mean, 4)


@dataclass
class CouncilTelemetry(Telemetry):
    """`eqlm.council`: the members, the controls, the game per generated token, and their summary.

    Per-token fields come from `token_entry` and summary fields from `council_object`: a new figure is added
    there, and JSON answers and streams both carry it.
    """

    members: list[str]
    kinetic: dict

    def token_entry(self, index: int, token: int, text: str, entry) -> dict:
        """One generated token's entry (entry: its eqlm.council.CouncilEntry)."""
        return {"index": index, "token": int(token), "text": text, **entry.as_json(self.members)}

    def council_object(self, entries: list[dict], tokens: list[dict] | None = None) -> dict:
        """The `council` object summing up `entries`; it lists `tokens` (default: the entries themselves)."""
        games = [e["iterations"] for e in entries]
        return {
            "members": self.members,
            "kinetic": self.kinetic,
            "mean_game_updates": round(sum(games) / len(games), 4) if games else 0.0,
            "converged_fraction": round(sum(e["converged"] for e in entries) / len(entries), 4) if entries else None,
            "tokens": entries if tokens is None else tokens,
        }

    def result_entries(self, result, choice: int = 0) -> list[dict]:
        pairs = enumerate(zip(result.tokens, result.entries, strict=True))
        return [{"choice": choice, **self.token_entry(k, ev.token_id, ev.text, e)} for k, (ev, e) in pairs]

    def add_to_summary(self, summary: dict, entries: list[dict]) -> dict:
        return self.label(summary, entries) | {"council": self.council_object(entries)}

    def label(self, summary: dict, entries: list[dict] | None = None) -> dict:
        """`mean_iterations` and `iterations_per_token` count block iterations, as for every model: per token, the
        mean over the members, each of which solves its own block (`council.tokens[].members[]`). The game's updates
        per token, which the generator reports as the tokens' iterations, get their own fields: `mean_game_updates`
        and `game_updates_per_token`. With no generated token the prompt solve's figures stay, and the game's are
        null."""
        games = list(summary.get("iterations_per_token") or [])
        if not games or not entries:
            return {**summary, "mean_game_updates": None, "game_updates_per_token": []}
        blocks = [_members_mean(entry) for entry in entries]
        return {
            **summary,
            "mean_iterations": round(sum(blocks) / len(blocks), 4),
            "iterations_per_token": blocks,
            "mean_game_updates": round(sum(games) / len(games), 4),
            "game_updates_per_token": games,
        }

    def follow(self, stream) -> CouncilStreamTelemetry:
        return CouncilStreamTelemetry(self, stream.stats)


@dataclass
class CouncilStreamTelemetry(StreamTelemetry):
    """One streamed council choice: each chunk carries the entries of its tokens; a token without text of its own
    (part of a character) waits for the next chunk with text, or the closing chunk."""

    telemetry: CouncilTelemetry
    stats: object  # the stream's eqlm.council.CouncilStats: one CouncilEntry per generated token
    sent: list[dict] = field(default_factory=list)  # the entries of every event seen so far
    pending: list[dict] = field(default_factory=list)  # those not yet in a chunk

    def on_event(self, event) -> dict | None:
        k = len(self.sent)
        entry = self.telemetry.token_entry(k, event.token_id, event.text, self.stats.entries[k])
        self.sent.append(entry)
        self.pending.append(entry)
        if not event.text:
            return None
        pending, self.pending = self.pending, []
        return {"council": {"members": self.telemetry.members, "tokens": pending}}

    def close(self, summary: dict) -> dict:
        pending, self.pending = self.pending, []
        council = self.telemetry.council_object(self.sent, pending)
        return self.telemetry.label(summary, self.sent) | {"council": council}

    @property
    def entries(self) -> list[dict]:
        return self.sent
