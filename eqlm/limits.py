"""What a request may ask of a model: the depth range, the default depth, the solvers, the default model id.

Every Python place that checks or documents these imports them from here. The export writes the depth range and
the solvers into each model's manifest.json (`min_depth`, `max_depth`, `solvers`, next to the model's own
`default_depth`), where the browser reads them. No torch, no Django.
"""

DEPTH_MIN = 1
DEPTH_MAX = 64  # iterations per token at most: a fixed depth, or the cap on adaptive halting
DEFAULT_DEPTH = 8  # when neither the request nor the model's manifest says otherwise
SOLVERS = ("picard", "anderson")  # fixed-point solvers (eqlm/fixed_point.py); the first is the default
DEFAULT_SOLVER = SOLVERS[0]
DEFAULT_MODEL_ID = "eqlm-demo"
