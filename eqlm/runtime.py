"""The onnxruntime runtime's names in one place, for importers that predate its split (never torch).

The code lives in decoder.py (graphs, cache, `process`), generation.py (`Generator`) and scoring.py (bits/byte,
prompt scores); new code imports from those.
"""

from .decoder import ContextLengthExceeded, DecodeCache, OnnxEqLM, process
from .generation import (
    GenerationRequest,
    GenerationResult,
    Generator,
    StreamStats,
    TokenEvent,
    TokenStream,
    choose_token,
)
from .scoring import PromptScore, bits_per_byte, rolling_bits_per_byte, rolling_windows, score_prompt
from .units import LN2

__all__ = [
    "LN2",
    "ContextLengthExceeded",
    "DecodeCache",
    "GenerationRequest",
    "GenerationResult",
    "Generator",
    "OnnxEqLM",
    "PromptScore",
    "StreamStats",
    "TokenEvent",
    "TokenStream",
    "bits_per_byte",
    "choose_token",
    "process",
    "rolling_bits_per_byte",
    "rolling_windows",
    "score_prompt",
]
