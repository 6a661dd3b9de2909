"""Scoring through /v1: model-id suffixes for the EqLM controls, the context rule, and logprobs on the wire.

Harnesses can set only `model`, so `eqlm-demo@depth=12;solver=anderson` names a configuration: `@`, then
`key=value` pairs joined by `;` (never a comma: harnesses split their arguments on commas). The keys are the
EqLM fields (depth, tol, solver, warm_start), validated exactly as the body fields are. The logprob shapes are
built by eqlm.logprobs from one log-probability row per token, so any scorer can reuse them.
"""

from __future__ import annotations

from collections.abc import Sequence

from eqlm.logprobs import chat_logprob_entry, completion_logprobs, merge_completion_logprobs
from portal.api import ApiError

SUFFIX_KEYS = ("depth", "tol", "solver", "warm_start")
SUFFIX_SEPARATOR = "@"


def split_model_id(model_id: str) -> tuple[str, str | None]:
    """(base id, suffix or None): `eqlm-demo@depth=12` -> ("eqlm-demo", "depth=12")."""
    base, sep, suffix = model_id.partition(SUFFIX_SEPARATOR)
    return base, (suffix if sep else None)


def parse_suffix(model_id: str) -> dict:
    """The EqLM controls a model id names, validated like the body fields; {} without a suffix."""
    from .serializers import GenerationParamsSerializer

    base, suffix = split_model_id(model_id)
    if suffix is None:
        return {}
    raw: dict[str, str] = {}
    for part in suffix.split(";"):
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
    serializer = GenerationParamsSerializer(data={"model": base, **raw}, partial=True)
    if not serializer.is_valid():
        key, messages = next(iter(serializer.errors.items()))
        message = messages[0] if isinstance(messages, list) else messages
        raise ApiError(
            f"The model id suffix's {key}={raw.get(key)!r} is invalid: {message}",
            param="model",
            code="invalid_model_suffix",
        )
    return {key: serializer.validated_data[key] for key in raw}


def apply_suffix(data: dict, body: dict) -> dict:
    """Fold the model id's controls into validated request data; a body field that disagrees is a 400."""
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


def check_scoring_context(prompt_lengths: Sequence[int], max_positions: int, param: str = "prompt") -> None:
    """Scored prompts must fit the model's context: dropping their first bytes would give wrong scores."""
    for length in prompt_lengths:
        if length > max_positions:
            raise ApiError(
                f"The prompt is {length} tokens (bytes) but this model's context is {max_positions} tokens; "
                "with logprobs or echo it is never truncated (generation alone keeps the last bytes).",
                param=param,
                code="context_length_exceeded",
            )


# --- the shapes, from the generator's events and stats -----------------------------------------------------------


def prompt_logprobs(prompt_ids: Sequence[int], rows, k: int) -> dict:
    """Legacy `logprobs` of an echoed prompt: the first token has no prediction (null), as in OpenAI and vLLM."""
    per_token = [None, *list(rows)] if prompt_ids else []
    return completion_logprobs(list(prompt_ids), per_token, k, offset=0)


def events_logprobs(events, k: int, offset: int) -> dict:
    """Legacy `logprobs` of generated tokens (TokenEvents carrying their log-softmax rows)."""
    return completion_logprobs([e.token_id for e in events], [e.logprobs for e in events], k, offset)


def completion_choice_logprobs(prompt_ids, stats, events, k: int, echo: bool) -> dict:
    """One choice's legacy `logprobs`: the prompt's tokens first with echo, then the generated ones."""
    parts = []
    offset = 0
    if echo:
        parts.append(prompt_logprobs(prompt_ids, stats.prompt_logprobs, k))
        offset = len(prompt_ids)
    parts.append(events_logprobs(events, k, offset))
    return merge_completion_logprobs(parts)


def chat_choice_logprobs(events, k: int) -> dict:
    """One chat choice's `logprobs`: `{content: [{token, logprob, bytes, top_logprobs}]}`."""
    return {"content": [chat_logprob_entry(e.token_id, e.logprobs, k) for e in events], "refusal": None}
