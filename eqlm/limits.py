"""What a request may ask of a model: the depth range, the default depth, the solvers, starts, halting rules.

Every Python place that checks or documents these imports them from here. The export writes the depth range, the
solvers, the starts and the halting rules into each model's manifest.json (`min_depth`, `max_depth`, `solvers`,
`starts`, `halts`, next to the model's own `default_depth`), where the browser reads them. `max_depth` is the model's
own cap: DEPTH_MAX unless its export declared another, never above DEPTH_CAP_MAX. No torch, no Django.
"""

DEPTH_MIN = 1
DEPTH_MAX = 64  # iterations per token at most: a fixed depth, or the cap on adaptive halting (a model's default cap)
DEPTH_CAP_MAX = 128  # the largest `max_depth` a model's manifest may declare
# the deepest a registry evaluation measures: past a model's serving cap on purpose, to show whether more
# iterations would help
EVALUATION_DEPTH_MAX = DEPTH_CAP_MAX
EXPERIMENT_DEPTH_MAX = 256  # the deepest an experiment's registered depths and halting budgets may ask for
DEFAULT_DEPTH = 8  # when neither the request nor the model's manifest says otherwise
SOLVERS = ("picard", "anderson")  # fixed-point solvers (eqlm/fixed_point.py); the first is the default
DEFAULT_SOLVER = SOLVERS[0]
# the runtime's Anderson (decoder.process, eqlm-runtime.js) runs this many Picard iterations before it mixes: the
# first iterates from the start move far, and a secant model of them misleads the mix (bench/anderson.py)
ANDERSON_PICARD_FIRST = 6
# where a new position's solve starts: 0; the previous position's final state; N(0, 1) from eqlm/noise.py
STARTS = ("zero", "warm", "noise")
DEFAULT_START = STARTS[0]
# when a position stops iterating (with a tol): its relative residual, or the KL between successive iterations'
# next-byte distributions (eqlm/fixed_point.py: residual_below, kl_below); the first is the default
HALTS = ("residual", "kl")
DEFAULT_HALT = HALTS[0]
DEFAULT_MODEL_ID = "eqlm-demo"


def model_depths(manifest: dict) -> tuple[int, int]:
    """(default_depth, max_depth) of a model from its manifest; refuses a manifest outside the limits above."""
    cap = int(DEPTH_MAX if manifest.get("max_depth") is None else manifest["max_depth"])
    if not DEPTH_MIN <= cap <= DEPTH_CAP_MAX:
        raise ValueError(f"a model's max_depth must be between {DEPTH_MIN} and {DEPTH_CAP_MAX}, not {cap}")
    default = int(DEFAULT_DEPTH if manifest.get("default_depth") is None else manifest["default_depth"])
    if not DEPTH_MIN <= default <= cap:
        raise ValueError(f"a model's default_depth must be between {DEPTH_MIN} and its max_depth {cap}, not {default}")
    return default, cap
