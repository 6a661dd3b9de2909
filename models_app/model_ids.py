"""The model-id grammar: `base@key=value;key=value`, and which base ids name the council.

Harnesses can set only `model`, so `eqlm-demo@depth=12;solver=anderson` names a configuration: `@`, then
`key=value` pairs joined by `;` (never a comma: harnesses split their arguments on commas). The keys are the
EqLM fields (depth, tol, solver, warm_start, start, halt, precision); this module checks the syntax, and
inference/v1/serializers.py validates the values exactly as it validates the body fields. The serving layer only
needs the base id.
"""

from __future__ import annotations

from portal.api import ApiError

SUFFIX_SEPARATOR = "@"
PAIR_SEPARATOR = ";"
SUFFIX_KEYS = ("depth", "tol", "solver", "warm_start", "start", "halt", "precision")
COUNCIL_ID = "eqlm-council"


def split_model_id(model_id: str) -> tuple[str, str | None]:
    """(base id, suffix or None): `eqlm-demo@depth=12` -> ("eqlm-demo", "depth=12")."""
    base, sep, suffix = model_id.partition(SUFFIX_SEPARATOR)
    return base, (suffix if sep else None)


def base_id(model_id: str) -> str:
    """The model that serves an id: `eqlm-demo@depth=12` is served by `eqlm-demo`."""
    return split_model_id(model_id)[0]


def is_council_id(model_id: str) -> bool:
    """Whether a model id (a configuration suffix such as `@depth=12` included) names the council."""
    return base_id(model_id) == COUNCIL_ID


def suffix_pairs(model_id: str) -> dict[str, str]:
    """The suffix's key=value pairs as strings ({} without a suffix); a 400 for a malformed suffix or unknown key."""
    base, suffix = split_model_id(model_id)
    if suffix is None:
        return {}
    raw: dict[str, str] = {}
    for part in suffix.split(PAIR_SEPARATOR):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or not key or not value.strip():
            raise ApiError(
                f"The model id suffix '@{suffix}' is not key=value pairs joined by ';' "
                f"(e.g. {base}@depth=12;solver=anderson).",
                param="model",
                code="invalid_model_suffix",
            )
        if key not in SUFFIX_KEYS:
            raise ApiError(
                f"Unknown key '{key}' in the model id suffix; the keys are {', '.join(SUFFIX_KEYS)}.",
                param="model",
                code="invalid_model_suffix",
            )
        if key in raw:
            raise ApiError(f"'{key}' appears twice in the model id suffix.", param="model", code="invalid_model_suffix")
        raw[key] = value.strip()
    return raw
