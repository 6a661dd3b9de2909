"""Scoring through /v1: the context rule and logprobs on the wire.

Harnesses name the EqLM controls in the model id (inference/model_ids.py; validated in serializers.py). The logprob
shapes are built by eqlm.logprobs from one log-probability row per token, so any scorer can reuse them.
"""

from __future__ import annotations

from collections.abc import Sequence

from eqlm.logprobs import chat_logprob_entry, completion_logprobs, merge_completion_logprobs
from portal.api import ApiError


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
