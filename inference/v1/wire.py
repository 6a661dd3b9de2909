"""The /v1/ wire shapes: OpenAI's response bodies, stream chunks and server-sent events, plus EqLM's `eqlm` object."""

import json
import math

from .plan import Plan


def eqlm_summary(plan: Plan, iterations: list[int], final_residual: float | None, request=None) -> dict:
    """The `eqlm` object of the tokens whose iterations are given (their last residual: final_residual); `request`:
    the one choice it covers (its own noise seed), None for all of them.

    With no token (echo with max_tokens 0 scores the prompt alone) the figures are the prompt solve's: at a fixed
    depth every position ran exactly that many iterations; an adaptive solve's counts and any residual are not
    reported by the runtime, so they are null, never a 0 that would claim a converged solve.
    """
    fields = plan.choice_eqlm(request)
    if not iterations:
        fixed = fields.get("mode") == "fixed" and fields.get("depth_requested") is not None
        return {
            **fields,
            "mean_iterations": float(fields["depth_requested"]) if fixed else None,
            "iterations_per_token": [],
            "final_residual": None,
        }
    finite = final_residual is not None and math.isfinite(final_residual)
    return {
        **fields,
        "mean_iterations": round(sum(iterations) / len(iterations), 4),
        "iterations_per_token": iterations,
        "final_residual": float(final_residual) if finite else None,
    }


def usage(prompt_tokens: int, completion_tokens: int) -> dict:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def sse(payload) -> bytes:
    text = payload if isinstance(payload, str) else json.dumps(payload, separators=(",", ":"))
    return f"data: {text}\n\n".encode()


def response_body(ident: str, obj: str, created: int, model_id: str, choices: list, usage_: dict, eqlm: dict) -> dict:
    """One JSON answer (`text_completion` or `chat.completion`)."""
    return {
        "id": ident,
        "object": obj,
        "created": created,
        "model": model_id,
        "system_fingerprint": None,
        "choices": choices,
        "usage": usage_,
        "eqlm": eqlm,
    }


def text_choice(index: int, text: str, reason: str, logprobs: dict | None = None) -> dict:
    return {"index": index, "text": text, "logprobs": logprobs, "finish_reason": reason}


def chat_choice(index: int, text: str, reason: str, logprobs: dict | None = None) -> dict:
    return {
        "index": index,
        "message": {"role": "assistant", "content": text, "refusal": None},
        "logprobs": logprobs,
        "finish_reason": reason,
    }


def text_delta(index: int, *, text: str | None = None, reason: str | None = None, logprobs: dict | None = None):
    """A completions stream chunk's choice: the new text (empty on the closing chunk) and its tokens' logprobs."""
    return {"index": index, "text": text or "", "logprobs": logprobs, "finish_reason": reason}


def chat_delta(
    index: int, *, text: str | None = None, role: bool = False, reason: str | None = None, logprobs: dict | None = None
) -> dict:
    """A chat stream chunk's choice: the role first, then content deltas, then an empty delta with the reason."""
    delta = {}
    if role:
        delta = {"role": "assistant", "content": ""}
    elif text is not None:
        delta = {"content": text}
    return {"index": index, "delta": delta, "logprobs": logprobs, "finish_reason": reason}


def chunk_body(ident: str, obj: str, created: int, model_id: str, choice: dict, plan: Plan, eqlm=None) -> dict:
    body = response_body(ident, obj, created, model_id, [choice], None, eqlm)
    if not plan.include_usage:
        del body["usage"]  # a chunk carries `usage` (null) only when the last chunk will carry the real one
    if eqlm is None:
        del body["eqlm"]
    return body


def usage_chunk(ident: str, obj: str, created: int, model_id: str, usage_: dict, eqlm: dict) -> dict:
    """The last chunk when stream_options.include_usage is set: usage, and empty choices."""
    return response_body(ident, obj, created, model_id, [], usage_, eqlm)
