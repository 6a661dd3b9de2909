"""A validated /v1/ request turned into what the generator needs (prompts in the model's tokens, n, limits, solver
settings)."""

from dataclasses import dataclass, field

from django.conf import settings

from eqlm.limits import DEFAULT_DEPTH
from eqlm.manifest import DEFAULT_PRECISION
from eqlm.tokenizers import Tokenizer, get_tokenizer
from portal.api import ApiError

COMPLETIONS_DEFAULT_MAX_TOKENS = 16  # OpenAI's default for /v1/completions
CHAT_DEFAULT_MAX_TOKENS = 64


class TokenIds(tuple):
    """A prompt sent as token ids (of the model's tokenizer): scored and continued exactly as sent, never re-encoded."""


def chat_prompt(messages: list[dict]) -> str:
    """The demo model is not instruction-tuned: the conversation becomes plain text for it to continue."""
    return "\n".join(message["content"] for message in messages if message["content"]) + "\n"


@dataclass
class Plan:
    """A validated request turned into what the generator needs, plus what the response reports."""

    prompts: list[str | TokenIds]  # TokenIds: a token-id prompt, scored and continued exactly as sent
    n: int
    max_tokens: int
    params: dict
    stream: bool
    include_usage: bool
    echo: bool = False
    eqlm: dict = field(default_factory=dict)
    logprobs: int | None = None  # alternatives per token when log probabilities were asked for (0-20), else None
    model: str = ""  # the model id as sent (a suffix included); responses echo it
    tokenizer: Tokenizer = field(default_factory=lambda: get_tokenizer("bytes"))  # the model's (eqlm.tokenizers)
    prompt_ids: list[list[int]] = field(default_factory=list)  # each prompt in the model's tokens

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
        """(choice index, prompt text, GenerationRequest) for every prompt × n, each prompt in the model's tokens,
        with per-choice seeds (seed + copy) when a seed is set: sampling's, and the noise start's."""
        from eqlm.generation import GenerationRequest

        index = 0
        for prompt, ids in zip(self.prompts, self.prompt_ids, strict=True):
            text = prompt_text(prompt, self.tokenizer)
            for copy in range(self.n):
                params = dict(self.params)
                if params["seed"] is not None:
                    params["seed"] = params["seed"] + copy
                request = GenerationRequest(
                    prompt=text,
                    max_tokens=self.max_tokens,
                    prompt_ids=tuple(ids),
                    logprobs=self.logprobs is not None,
                    echo_logprobs=self.echo and self.logprobs is not None,
                    **params,
                )
                yield index, text, request
                index += 1


def prompt_text(prompt: str | TokenIds, tokenizer: Tokenizer) -> str:
    """A token-id prompt's text (lossy: U+FFFD for bytes that are not valid UTF-8); what echo returns."""
    return tokenizer.decode(list(prompt)) if isinstance(prompt, TokenIds) else prompt


def prompt_ids(prompt: str | TokenIds, tokenizer: Tokenizer) -> list[int]:
    """A prompt in the model's tokens: token ids as sent, text encoded by the model's tokenizer."""
    return list(prompt) if isinstance(prompt, TokenIds) else tokenizer.encode(prompt)


def check_token_ids(prompts: list, tokenizer: Tokenizer, param: str) -> None:
    """A 400 naming `param` for a token id outside the model's vocabulary."""
    for prompt in prompts:
        if not isinstance(prompt, TokenIds):
            continue
        bad = next((t for t in prompt if not 0 <= t < tokenizer.vocab_size), None)
        if bad is not None:
            kind = "bytes" if tokenizer.name == "bytes" else f"{tokenizer.name} ids"
            raise ApiError(
                f"Token ids are {kind}: integers from 0 to {tokenizer.vocab_size - 1} (got {bad}).", param=param
            )


def alternatives_asked(data: dict) -> int | None:
    """Top alternatives per token when log probabilities were asked for, else None.

    Completions: `logprobs` is that number (0-20). Chat: `logprobs: true`, with `top_logprobs` alternatives.
    """
    if "messages" in data:
        return (data.get("top_logprobs") or 0) if data.get("logprobs") else None
    return data.get("logprobs")


def build_plan(
    data: dict, prompts: list[str | TokenIds], default_max_tokens: int, param: str, tokenizer: Tokenizer | None = None
) -> Plan:
    """The plan of a validated request; prompts are counted and checked in `tokenizer`'s tokens (the model's; UTF-8
    bytes when None)."""
    tokenizer = tokenizer or get_tokenizer("bytes")
    max_tokens = data.get("max_completion_tokens") or data.get("max_tokens")
    if max_tokens is None or (max_tokens == 0 and not data.get("echo")):
        max_tokens = default_max_tokens
    max_tokens = min(max_tokens, settings.API_MAX_TOKENS)
    check_token_ids(prompts, tokenizer, param)
    ids = [prompt_ids(prompt, tokenizer) for prompt in prompts]
    unit = "UTF-8 bytes" if tokenizer.name == "bytes" else "GPT-2 BPE tokens"
    for tokens in ids:
        if len(tokens) > settings.API_MAX_PROMPT_TOKENS:
            raise ApiError(
                f"The prompt is {len(tokens)} tokens ({unit}); this server accepts at most "
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
        tokenizer=tokenizer,
        prompt_ids=ids,
        eqlm={
            "depth_requested": depth,
            "mode": "adaptive" if data["tol"] is not None else "fixed",
            "tol": data["tol"],
            "start": data["start"],
            "noise_seed": data["seed"] if data["start"] == "noise" else None,
            "warm_start": data["warm_start"],
            "halt": data["halt"] if data["tol"] is not None else None,
            "solver": data["solver"],
            "precision": data.get("precision") or DEFAULT_PRECISION,
        },
    )
