"""Scoring through /v1: the context rule and logprobs on the wire.

Harnesses name the EqLM controls in the model id (models_app/model_ids.py; validated in serializers.py). The logprob
shapes are built by eqlm.logprobs from one log-probability row per token, so any scorer can reuse them.
"""

from __future__ import annotations

from collections.abc import Sequence

from eqlm.logprobs import TextOffsets, chat_logprob_entry, completion_logprobs, merge_completion_logprobs
from eqlm.tokenizers import Tokenizer
from portal.api import ApiError


def token_unit(tokenizer: Tokenizer) -> str:
    """What a model's tokens are, for messages: "bytes" or "GPT-2 BPE tokens"."""
    return "bytes" if tokenizer.name == "bytes" else "GPT-2 BPE tokens"


def check_scoring_context(
    prompt_lengths: Sequence[int], max_positions: int, param: str = "prompt", unit: str = "bytes"
) -> None:
    """Scored prompts must fit the model's context: dropping their first tokens would give wrong scores."""
    for length in prompt_lengths:
        if length > max_positions:
            kept = "bytes" if unit == "bytes" else "tokens"
            raise ApiError(
                f"The prompt is {length} tokens ({unit}) but this model's context is {max_positions} tokens; "
                f"with logprobs or echo it is never truncated (generation alone keeps the last {kept}).",
                param=param,
                code="context_length_exceeded",
            )


# --- the shapes, from the generator's events and stats -----------------------------------------------------------


def prompt_logprobs(
    prompt_ids: Sequence[int], rows, k: int, tokenizer: Tokenizer | None = None, offsets: TextOffsets | None = None
) -> dict:
    """Legacy `logprobs` of an echoed prompt: the first token has no prediction (null), as in OpenAI and vLLM."""
    per_token = [None, *list(rows)] if prompt_ids else []
    return completion_logprobs(list(prompt_ids), per_token, k, 0, tokenizer, offsets)


def events_logprobs(
    events, k: int, offset: int, tokenizer: Tokenizer | None = None, offsets: TextOffsets | None = None
) -> dict:
    """Legacy `logprobs` of generated tokens (TokenEvents carrying their log-softmax rows)."""
    ids, rows = [e.token_id for e in events], [e.logprobs for e in events]
    return completion_logprobs(ids, rows, k, offset, tokenizer, offsets)


def completion_choice_logprobs(prompt_ids, stats, events, k: int, echo: bool, tokenizer: Tokenizer | None = None):
    """One choice's legacy `logprobs`: the prompt's tokens first with echo, then the generated ones; text offsets
    run on through both (the choice's text is the prompt's, then the completion's)."""
    parts = []
    offsets = TextOffsets(tokenizer)
    if echo:
        parts.append(prompt_logprobs(prompt_ids, stats.prompt_logprobs, k, tokenizer, offsets))
    parts.append(events_logprobs(events, k, 0, tokenizer, offsets))
    return merge_completion_logprobs(parts)


def chat_choice_logprobs(events, k: int, tokenizer: Tokenizer | None = None) -> dict:
    """One chat choice's `logprobs`: `{content: [{token, logprob, bytes, top_logprobs}]}`."""
    entries = [chat_logprob_entry(e.token_id, e.logprobs, k, tokenizer) for e in events]
    return {"content": entries, "refusal": None}
