"""What an export's manifest says about running its model: the graph of each iteration slot, where a solve starts,
and which of a request's controls the model takes.

An EqLM runs one `step` graph in every slot and takes every control (its depth cap is limits.model_depths'). An
explicit transformer (model_class "ExplicitLM") runs layer i's graph in slot i, starts from the embedding, and its
depth is its layer count: its manifest fixes the depth (min_depth = max_depth) and lists no start, no halting rule
and one solver, so a request that sets another is refused here, with why. The server runtime, the /v1 API and the
dial (which reads the same manifest keys) all take the rule from here. Pure: no torch, no onnxruntime, no Django.
"""

from __future__ import annotations

from .limits import DEFAULT_HALT, DEFAULT_SOLVER, DEFAULT_START, DEPTH_MIN, HALTS, SOLVERS, STARTS, model_depths

EXPLICIT_CLASS = "ExplicitLM"
CONTROLS = ("depth", "tol", "solver", "start", "halt", "warm_start", "precision")  # what a request may set, in order
PRECISIONS = ("fp32", "int8")  # the weights a model may be run with: fp32, or int8 where its export has int8 graphs
DEFAULT_PRECISION = "fp32"

EXPLICIT_WHY = {
    "tol": "an explicit transformer applies each of its layers once: nothing iterates to a fixed point, so no "
    "position halts and there is no tolerance",
    "solver": "an explicit transformer applies each of its layers once, in order: there is no fixed point to solve "
    "(its one solver is 'picard', the plain pass)",
    "start": "an explicit transformer starts from the embedding of its input: there is no start state to choose",
    "warm_start": "an explicit transformer starts from the embedding of its input: there is no warm start",
    "halt": "an explicit transformer does not iterate: there is no halting rule",
}


class ControlRefused(ValueError):
    """A request sets a control its model does not take (the message says which and why)."""

    def __init__(self, control: str, value, why: str):
        super().__init__(f"{control}={value!r} is refused: {why}")
        self.control, self.value, self.why = control, value, why


def is_explicit(manifest: dict) -> bool:
    return manifest.get("model_class") == EXPLICIT_CLASS


def layer_roles(manifest: dict) -> list[str]:
    """The graph role of each slot of an explicit transformer, in order (slot i applies layer i); [] for an EqLM."""
    if not is_explicit(manifest):
        return []
    roles = list(manifest.get("layers") or [])
    if not roles:
        raise ValueError("an explicit transformer's manifest lists no layers")
    return roles


def graph_roles(manifest: dict) -> tuple[str, ...]:
    """The graphs a runtime loads: embed, then `step` (an EqLM) or every layer in order (explicit), then head."""
    return ("embed", *(layer_roles(manifest) or ["step"]), "head")


def depth_range(manifest: dict) -> tuple[int, int]:
    """(min_depth, max_depth) of a model: an EqLM's is DEPTH_MIN..its cap; an explicit transformer's is its layer
    count, both ends."""
    _, cap = model_depths(manifest)
    low = int(manifest.get("min_depth") or DEPTH_MIN)
    if not DEPTH_MIN <= low <= cap:
        raise ValueError(f"a model's min_depth must be between {DEPTH_MIN} and its max_depth {cap}, not {low}")
    return low, cap


def fixed_depth(manifest: dict) -> int | None:
    """The one depth a model takes (an explicit transformer's layer count), None when it takes a range."""
    low, high = depth_range(manifest)
    return low if low == high else None


def precisions_of(manifest: dict) -> list[str]:
    """The precisions a model's export has graphs for (`precisions`; an older export: fp32)."""
    return [p for p in manifest.get("precisions") or [DEFAULT_PRECISION] if p in PRECISIONS]


def precision_why(manifest: dict, value) -> str:
    if value not in PRECISIONS:
        return f"precision is one of {' or '.join(map(repr, PRECISIONS))}"
    listed = precisions_of(manifest)
    if len(listed) == 1:
        return f"this model's export has {listed[0]} graphs only, so it takes precision {listed[0]!r}"
    return f"this model takes precision {' or '.join(map(repr, listed))}"


def check_precision(manifest: dict, precision: str) -> None:
    """Raise ControlRefused when the model has no graphs of `precision`."""
    if precision not in precisions_of(manifest):
        raise ControlRefused("precision", precision, precision_why(manifest, precision))


def precision_graphs(manifest: dict, precision: str = DEFAULT_PRECISION) -> dict:
    """{role: file} of the graphs a runtime loads at `precision` (int8: each role's `<role>_int8` graph; an older
    export that quantised only its step falls back on the fp32 graph of the other roles)."""
    graphs = manifest["graphs"]
    fp32 = {role: name for role, name in graphs.items() if not role.endswith("_int8")}
    if precision == DEFAULT_PRECISION:
        return fp32
    return {role: graphs.get(f"{role}_{precision}", name) for role, name in fp32.items()}


def controls_of(manifest: dict) -> dict:
    """What a model takes, as /v1/models and the dial show it: its depths, solvers, starts and halting rules, whether
    it takes a tol, and (explicit) a note saying why the rest is fixed."""
    low, high = depth_range(manifest)
    default, _ = model_depths(manifest)
    halts = list(manifest.get("halts", HALTS))
    out = {
        "min_depth": low,
        "max_depth": high,
        "default_depth": default,
        "solvers": list(manifest.get("solvers", SOLVERS)),
        "starts": list(manifest.get("starts", STARTS)),
        "halts": halts,
        "tol": bool(halts),
        "precisions": precisions_of(manifest),
    }
    if manifest.get("controls_note"):
        out["note"] = manifest["controls_note"]
    return out


def _why(manifest: dict, control: str, value) -> str:
    if control == "precision":
        return precision_why(manifest, value)
    if is_explicit(manifest):
        if control == "depth":
            n = fixed_depth(manifest)
            return f"an explicit transformer's depth is its layer count ({n}); depth {value} does not exist for it"
        return EXPLICIT_WHY[control]
    taken = controls_of(manifest)
    if control == "depth":
        return f"this model takes depth {taken['min_depth']} to {taken['max_depth']}"
    if control == "tol":
        return "this model has no halting rule, so it takes no tol"
    if control == "warm_start":
        return "this model has no warm start"
    listed = taken[{"solver": "solvers", "start": "starts", "halt": "halts"}[control]]
    return f"this model takes {control} {' or '.join(map(repr, listed))}" if listed else f"this model has no {control}"


def refused_controls(manifest: dict, given: dict) -> list[tuple[str, str]]:
    """(control, why) for each control in `given` (those a request set, by name in CONTROLS) that the model does not
    take, in CONTROLS order. A depth above an EqLM's cap is not checked here (limits.model_depths gives the cap its
    callers hold a request to); a depth below min_depth, or other than a fixed depth, is."""
    taken = controls_of(manifest)
    refused = []
    for control in CONTROLS:
        if control not in given or given[control] is None:
            continue
        value = given[control]
        if control == "depth":
            fixed = fixed_depth(manifest)
            bad = int(value) < taken["min_depth"] or (fixed is not None and int(value) != fixed)
        elif control == "tol":
            bad = not taken["tol"]
        elif control == "warm_start":
            bad = not taken["starts"] or (bool(value) and "warm" not in taken["starts"])
        elif control == "precision":
            bad = value not in taken["precisions"]
        else:
            bad = value not in taken[{"solver": "solvers", "start": "starts", "halt": "halts"}[control]]
        if bad:
            refused.append((control, _why(manifest, control, value)))
    return refused


def check_controls(manifest: dict, given: dict) -> None:
    """Raise ControlRefused for the first control in `given` that the model does not take."""
    for control, why in refused_controls(manifest, given):
        raise ControlRefused(control, given[control], why)


def requested_controls(
    depth: int | None = None,
    tol: float | None = None,
    solver: str = DEFAULT_SOLVER,
    start: str = DEFAULT_START,
    halt: str = DEFAULT_HALT,
    warm_start: bool | None = None,
    precision: str = DEFAULT_PRECISION,
) -> dict:
    """The controls a library call set: those away from their defaults (a default start, solver or halting rule is
    the model's own; the /v1 API, which knows what a request sent, checks every control sent)."""
    given = {"depth": depth, "tol": tol}
    given["solver"] = solver if solver != DEFAULT_SOLVER else None
    given["start"] = start if start != DEFAULT_START else None
    given["halt"] = halt if halt != DEFAULT_HALT else None
    given["warm_start"] = True if warm_start else None
    given["precision"] = precision if precision != DEFAULT_PRECISION else None
    return {k: v for k, v in given.items() if v is not None}
