"""A validated /v1/ request turned into what the generator needs (prompts, n, limits, solver settings)."""

from dataclasses import dataclass, field

from django.conf import settings

from eqlm.limits import DEFAULT_DEPTH
from portal.api import ApiError

COMPLETIONS_DEFAULT_MAX_TOKENS = 16  # OpenAI's default for /v1/completions
CHAT_DEFAULT_MAX_TOKENS = 64


def chat_prompt(messages: list[dict]) -> str:
    """The demo model is not instruction-tuned: the conversation becomes plain text for it to continue."""
    return "\n".join(message["content"] for message in messages if message["content"]) + "\n"


@dataclass
class Plan:
    """A validated request turned into what the generator needs, plus what the response reports."""

    prompts: list[str | bytes]  # bytes: a token-id prompt, scored and continued exactly as sent
    n: int
    max_tokens: int
    params: dict
    stream: bool
    include_usage: bool
    echo: bool = False
    eqlm: dict = field(default_factory=dict)
    logprobs: int | None = None  # alternatives per token when log probabilities were asked for (0-20), else None
    model: str = ""  # the model id as sent (a suffix included); responses echo it

    def choice_eqlm(self, request=None) -> dict:
        """The `eqlm` fields the plan fixes, for one choice's request (its own noise seed) or for all of them."""
        if request is None or self.eqlm.get("noise_seed") is None:
            return dict(self.eqlm)
        return {**self.eqlm, "noise_seed": request.noise_seed}

    @property
    def scoring(self) -> bool:
        """Log probabilities or echo: the prompt is scored whole, never left-truncated."""
        return self.logprobs is not None or self.echo

    def requests(self):
        """(choice index, GenerationRequest) for every prompt × n, with per-choice seeds (seed + copy) when a seed
        is set: sampling's, and the noise start's."""
        from eqlm.generation import GenerationRequest

        index = 0
        for prompt in self.prompts:
            for copy in range(self.n):
                params = dict(self.params)
                if params["seed"] is not None:
                    params["seed"] = params["seed"] + copy
                request = GenerationRequest(
                    prompt=prompt_text(prompt),
                    max_tokens=self.max_tokens,
                    prompt_ids=tuple(prompt) if isinstance(prompt, bytes) else None,
                    logprobs=self.logprobs is not None,
                    echo_logprobs=self.echo and self.logprobs is not None,
                    **params,
                )
                yield index, prompt_text(prompt), request
                index += 1


def prompt_text(prompt: str | bytes) -> str:
    """A token-id prompt's text (lossy: U+FFFD for bytes that are not valid UTF-8); what echo returns."""
    return prompt.decode("utf-8", errors="replace") if isinstance(prompt, bytes) else prompt


def prompt_token_count(prompt: str | bytes) -> int:
    return len(prompt) if isinstance(prompt, bytes) else len(prompt.encode("utf-8"))  # tokens are UTF-8 bytes


def alternatives_asked(data: dict) -> int | None:
    """Top alternatives per token when log probabilities were asked for, else None.

    Completions: `logprobs` is that number (0-20). Chat: `logprobs: true`, with `top_logprobs` alternatives.
    """
    if "messages" in data:
        return (data.get("top_logprobs") or 0) if data.get("logprobs") else None
    return data.get("logprobs")


def build_plan(data: dict, prompts: list[str], default_max_tokens: int, param: str) -> Plan:
    max_tokens = data.get("max_completion_tokens") or data.get("max_tokens")
    if max_tokens is None or (max_tokens == 0 and not data.get("echo")):
        max_tokens = default_max_tokens
    max_tokens = min(max_tokens, settings.API_MAX_TOKENS)
    for prompt in prompts:
        if prompt_token_count(prompt) > settings.API_MAX_PROMPT_TOKENS:
            raise ApiError(
                f"The prompt is {prompt_token_count(prompt)} tokens (UTF-8 bytes); this server accepts at most "
                f"{settings.API_MAX_PROMPT_TOKENS}.",
                param=param,
                code="context_length_exceeded",
            )
    if len(prompts) * data["n"] > settings.API_MAX_N:
        raise ApiError(f"At most {settings.API_MAX_N} choices per request (prompts × n).", param="n")
    depth = data["depth"]
    if depth is None and data["tol"] is None:
        depth = DEFAULT_DEPTH
    params = {
        "depth": depth,
        "tol": data["tol"],
        "start": data["start"],
        "warm_start": data["warm_start"],
        "halt": data["halt"],
        "solver": data["solver"],
        "temperature": data["temperature"],
        "top_p": data["top_p"],
        "seed": data["seed"],
        "stop": data["stop"],
    }
    options = data.get("stream_options") or {}
    return Plan(
        prompts=prompts,
        n=data["n"],
        max_tokens=max_tokens,
        params=params,
        stream=data["stream"],
        include_usage=bool(options.get("include_usage")),
        echo=data.get("echo", False),
        logprobs=alternatives_asked(data),
        eqlm={
            "depth_requested": depth,
            "mode": "adaptive" if data["tol"] is not None else "fixed",
            "tol": data["tol"],
            "start": data["start"],
            "noise_seed": data["seed"] if data["start"] == "noise" else None,
            "warm_start": data["warm_start"],
            "halt": data["halt"] if data["tol"] is not None else None,
            "solver": data["solver"],
        },
    )
