"""The generic long format every writer of result rows speaks, and the error that names what is wrong with it.

One measurement per record (`GENERIC_FIELDS`); parsers produce such records and results.records stores them.
Problems raise `IngestError` with a list of `{"pointer": "/json/pointer" | "line": n, "message": ...}` entries,
so nothing half-parsed is ever stored.
"""

from __future__ import annotations

# The generic long format: one measurement per record. Required: run, experiment, arm, metric, value.
GENERIC_FIELDS = {
    "run": "run id, e.g. exp10_5090/exp10_seed42 (required)",
    "experiment": "experiment name, e.g. exp10_5090 (required)",
    "arm": "arm label, e.g. A1 (required)",
    "seed": "integer seed (optional; needed for paired comparisons)",
    "seed_inferred": "true when the seed was guessed from a path (optional)",
    "metric": "metric name, e.g. blimp_accuracy (required)",
    "value": "finite number (required)",
    "unit": "unit, e.g. fraction, nats, MB, s (optional)",
    "n": "number of items evaluated (optional integer)",
    "step": "training step (optional integer; empty = end of run)",
    "condition": 'evaluation condition, a flat JSON object such as {"budget": 8} (optional)',
    "model_family": "explicit, tied, tied-anytime, ... (optional)",
    "model_name": "model name (optional)",
    "num_params": "parameter count (optional integer)",
    "config_hash": "config hash of the run (optional)",
    "git_commit": "commit of the harness (optional)",
    "hardware": "hardware the run used (optional)",
    "pointer": "where in the source the value came from (optional; filled in by the parsers)",
}
REQUIRED = ("run", "experiment", "arm", "metric", "value")
MAX_ABS_VALUE = 1e15


class IngestError(Exception):
    """A file that cannot be ingested; `errors` lists each problem with the pointer or line where it happened."""

    def __init__(self, message: str, errors: list[dict] | None = None):
        super().__init__(message)
        self.message = message
        self.errors = errors or [{"pointer": "", "message": message}]
