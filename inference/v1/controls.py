"""Which EqLM controls a /v1/ request sent, and the 400 for one its model does not take (eqlm/manifest.py's rule).

An explicit transformer (`explicit-demo`) takes one depth, its layer count, and no tol, solver but Picard, start,
warm start or halting rule: each sent one is a 400 naming the field (or `model`, when the id's suffix set it) and why.
An EqLM takes every control; its depth cap is base.check_depth's.
"""

from __future__ import annotations

import json

from eqlm.manifest import DEFAULT_PRECISION, controls_of, refused_controls
from models_app.model_ids import SUFFIX_KEYS, base_id, suffix_pairs
from portal.api import ApiError


def sent_controls(data: dict, body) -> dict:
    """{control: value} of the EqLM controls a request set, in its body (not null) or its model id's suffix, with
    their validated values (`data`: the request once apply_suffix has merged the two)."""
    suffix = suffix_pairs(data["model"])
    body = body if isinstance(body, dict) else {}
    return {key: data.get(key) for key in SUFFIX_KEYS if body.get(key) is not None or key in suffix}


def precision_of(data: dict) -> str:
    """The precision a validated request asks for (fp32 unless it sent one)."""
    return data.get("precision") or DEFAULT_PRECISION


def check_model_controls(model_id: str, sent: dict, manifest: dict) -> None:
    """A 400 for the first control sent that the model does not take: param `model` (invalid_model_suffix) when the
    id's suffix set it, else the field itself (unsupported_by_model)."""
    refused = refused_controls(manifest, sent)
    if not refused:
        return
    control, why = refused[0]
    base, value = base_id(model_id), json.dumps(sent[control])
    if control in suffix_pairs(model_id):
        raise ApiError(
            f"The model id suffix's {control}={value} is refused by '{base}': {why}.",
            param="model",
            code="invalid_model_suffix",
        )
    raise ApiError(
        f"The model '{base}' does not take {control}={value}: {why}.", param=control, code="unsupported_by_model"
    )


def settle_fixed_controls(data: dict, manifest: dict) -> dict:
    """A model without starts (an explicit transformer) starts where it must: the request's start and warm_start are
    unset (the `eqlm` object reports null, not a zero start it never made)."""
    if not controls_of(manifest)["starts"]:
        data["start"] = data["warm_start"] = None
    return data
