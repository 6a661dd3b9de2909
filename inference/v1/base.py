"""What every /v1 view shares: JSON whatever the content type, the API key, the runtime serving a model id, the
depth and served-model checks, and OpenAI's model objects."""

import logging

from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import JSONParser
from rest_framework.renderers import JSONRenderer
from rest_framework.views import APIView

from eqlm.limits import DEPTH_MIN
from eqlm.manifest import DEFAULT_PRECISION, controls_of
from models_app.model_ids import COUNCIL_ID, base_id, suffix_pairs
from portal.api import ApiError

from .keys import ApiKeyAuthentication

log = logging.getLogger(__name__)


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
    # No docstring: drf-spectacular would print an inherited one as every operation's description.
    # `served_model`: under a model's own server root (/serve/<id>/, model_root.py), that model's id, which the
    # tokenizer endpoints default to and the generation endpoints must be asked for; None at the site root.
    served_model: str | None = None
    authentication_classes = [ApiKeyAuthentication]
    permission_classes: list = []
    throttle_classes: list = []
    parser_classes = [AnyContentTypeJSONParser]
    renderer_classes = [JSONRenderer]
    content_negotiation_class = FirstRendererNegotiation

    @property
    def caller(self):
        return self.request.auth


def served_runtime(model_id: str, precision: str = DEFAULT_PRECISION):
    """The runtime serving a model id (models_app.serving.resolve) at `precision`, or the API's 404 model_not_found
    (listing every model a request may name, the council included), 400 for a precision its export has no graphs of,
    or 503 model_unavailable."""
    from models_app.serving import ModelUnavailable, UnknownModel, resolve

    from .controls import check_model_controls

    try:
        card = resolve(model_id)
        if precision != DEFAULT_PRECISION and not card.error:  # a 400 before anything is loaded
            check_model_controls(model_id, {"precision": precision}, card.manifest)
        return card.runtime(precision)
    except UnknownModel as exc:
        listed = exc.with_available([COUNCIL_ID])
        raise ApiError(str(listed), status_code=404, param="model", code="model_not_found") from None
    except ModelUnavailable as exc:
        log.warning("model %s could not be loaded: %s", model_id, exc)
        raise ApiError(
            f"The model '{model_id}' is unavailable on this server: {exc}", status_code=503, code="model_unavailable"
        ) from None


def check_depth(model_id: str, depth: int | None, max_depth: int) -> None:
    """A 400 when `depth` is past the model's own cap (its manifest's max_depth; the serializer has already held it
    to DEPTH_MIN..DEPTH_CAP_MAX). It names `depth`, or `model` when the depth came from the id's suffix."""
    if depth is None or depth <= max_depth:
        return
    base = base_id(model_id)
    if "depth" in suffix_pairs(model_id):
        raise ApiError(
            f"The model id suffix's depth={depth} is outside the range of '{base}': depth {DEPTH_MIN}–{max_depth} "
            "(its max_depth).",
            param="model",
            code="invalid_model_suffix",
        )
    raise ApiError(
        f"The model '{base}' takes depth {DEPTH_MIN}–{max_depth} (its max_depth); {depth} is outside that range.",
        param="depth",
        code="depth_out_of_range",
    )


def check_served_model(model_id: str, served: str | None) -> None:
    """A 400 naming `model` when a request to one model's server root (/serve/<id>/) asks for another model."""
    if served is not None and base_id(model_id) != served:
        raise ApiError(
            f"This server root serves the model '{served}' alone; the request asks for '{model_id}'.",
            param="model",
            code="model_not_served_here",
        )


def model_object(state: dict, created: int) -> dict:
    """OpenAI's model object, plus an `eqlm` object: the model's name, class, depths, controls and state in this
    process."""
    keys = ("name", "default", "model_class", "default_depth", "max_depth", "controls", "state", "error")
    extra = {k: state[k] for k in keys if k in state}
    return {"id": state["id"], "object": "model", "created": created, "owned_by": "eqlm-portal", "eqlm": extra}


def model_objects() -> list[dict]:
    """Every servable model, the default first; a default model whose files are missing is listed as failed."""
    from models_app.serving import model_cards, model_states

    cards = model_cards()
    objects = []
    for state in model_states():
        card = cards.get(state["id"])
        if card is not None:
            state = {**state, "model_class": card.manifest.get("model_class", "EqLM")}
            state |= {"default_depth": card.default_depth, "max_depth": card.max_depth}
            if not card.error:  # what a request may set (eqlm.manifest.controls_of): an explicit model's depth is fixed
                state["controls"] = controls_of(card.manifest)
        objects.append(model_object(state, card.created if card else 0))
    return objects


def model_created() -> int:
    """When the default model's manifest was written (OpenAI's `created`), 0 when it is missing."""
    from models_app.serving import UnknownModel, resolve

    try:
        return resolve().created
    except UnknownModel:
        return 0
