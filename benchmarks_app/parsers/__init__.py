"""Parsers for the programme's result files: bytes in, records in the generic long format out (no database).

One module per format (harness_a, harness_b, exp31, budget_sweep, lm_eval, compute_audit, ladder, generic), what
they share in base.py, content sniffing in detect.py, and the format registry with `parse_bytes` in registry.py.
"""

from .base import GENERIC_FIELDS, MAX_ABS_VALUE, REQUIRED, IngestError, Parsed, run_id_from_hint
from .detect import detect_format
from .registry import FORMATS, REGISTRY, parse_bytes, unknown_format_message

__all__ = [
    "FORMATS",
    "GENERIC_FIELDS",
    "MAX_ABS_VALUE",
    "REGISTRY",
    "REQUIRED",
    "IngestError",
    "Parsed",
    "detect_format",
    "parse_bytes",
    "run_id_from_hint",
    "unknown_format_message",
]
