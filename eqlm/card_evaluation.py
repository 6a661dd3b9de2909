"""A model card's evaluation figures, generated from what was measured on its checkpoint; never typed in.

Two sources beside the training loop's own held-out check (which eqlm.card_facts reads from the provenance):
- the metrics file `manage.py export_onnx` writes beside the checkpoint: held-out bits/byte by depth on the exported
  graphs over the whole held-out slice, and a bench's warm-start row where one is stored there;
- the checkpoint's stored quality-and-convergence rows (fixtures/local_results.json, written by
  `manage.py evaluate_convergence --write-fixture`): bits/byte and the converged share by depth and solver on
  held-out windows, and adaptive halting (mean iterations, bits/byte) at each tolerance.
A source measured on another checkpoint than the served one is left out and says so. An explicit transformer has one
depth, its layer count, and nothing that converges: its facts hold the export's figure at that depth and say that the
rest does not apply (`not_applicable`), rather than a residual or converged share that would mean nothing.

A card's prose names a figure in braces, `{converged.picard@32}`, or another bundled model's figure,
`{eqlm-demo-unrolled:best.export}`; `split_prose` cuts the prose into text and figure references and the pages print
each generated value, so the prose holds no number of its own. Pure: no Django, no torch.
"""

from __future__ import annotations

import re

from .limits import SOLVERS

CARD_DEPTHS = (4, 8, 12, 16, 24, 32, 48, 64)  # the columns of a card's table of figures by depth
CARD_TOL = 0.01  # the converged share and the halting figures a card quotes are at this tolerance
DIGITS = 4

FIGURE_REF = re.compile(r"\{(?:(?P<model>[a-z0-9][a-z0-9-]*):)?(?P<name>[a-z_]+(?:\.[a-z_]+)*(?:@\d+)?)\}")


def _round(value) -> float | None:
    return None if value is None else round(float(value), DIGITS)


# --- the stored convergence rows ------------------------------------------------------------------------------------


def local_rows(entry: dict) -> list[dict]:
    """The entry's rows, its series (format 2: one list of values by depth per condition) expanded to one per depth."""
    rows = [dict(zip(entry["columns"], values, strict=True)) for values in entry["rows"]]
    for metric, unit, n, condition, depths, values in entry.get("series", []):
        rows += [
            {"metric": metric, "value": value, "unit": unit, "n": n, "condition": {"depth": depth, **condition}}
            for depth, value in zip(depths, values, strict=True)
        ]
    return rows


def read_local(entry: dict) -> dict:
    """One model's entry of fixtures/local_results.json as {"by_depth": {solver: {depth: {"bits_per_byte": x,
    "converged": {tol: share}}}}, "halting": [{"solver", "tol", "cap", "mean_iterations", "bits_per_byte",
    "converged"}], "positions": n}."""
    by_depth: dict[str, dict[int, dict]] = {}
    halting: dict[tuple, dict] = {}
    positions = 0
    for row in local_rows(entry):
        condition, metric, value = row["condition"] or {}, row["metric"], row["value"]
        solver = condition.get("solver")
        if solver is None or condition.get("start", "zero") != "zero":  # the card shows the zero start's figures
            continue
        if "depth" in condition:
            cell = by_depth.setdefault(solver, {}).setdefault(int(condition["depth"]), {"converged": {}})
            if metric == "heldout_bits_per_byte":
                cell["bits_per_byte"] = value
                positions = max(positions, row["n"] or 0)
            elif metric == "converged_fraction":
                cell["converged"][float(condition["tol"])] = value
        elif "cap" in condition:
            key = (solver, float(condition["tol"]), int(condition["cap"]))
            point = halting.setdefault(key, {"solver": solver, "tol": key[1], "cap": key[2]})
            name = {"heldout_bits_per_byte": "bits_per_byte", "converged_fraction": "converged"}.get(metric, metric)
            point[name] = value
    order = {s: i for i, s in enumerate(SOLVERS)}
    points = sorted(halting.values(), key=lambda p: (order.get(p["solver"], len(order)), -p["tol"], p["cap"]))
    solvers = sorted(by_depth, key=lambda s: (order.get(s, len(order)), s))
    return {
        "by_depth": {s: dict(sorted(by_depth[s].items())) for s in solvers},
        "halting": points,
        "positions": positions,
    }


# --- the sources, checked against the served checkpoint -------------------------------------------------------------


def export_source(metrics: dict, metrics_file: str, served_sha256: str) -> dict | None:
    """What the export's metrics file measured, or None when there is no such file."""
    if not metrics:
        return None
    source = {
        "file": metrics_file,
        "measured_with": metrics.get("measured_with"),
        "checkpoint_sha256": metrics.get("checkpoint_sha256"),
        "held_out_bytes": (metrics.get("held_out") or {}).get("bytes"),
    }
    if metrics.get("checkpoint_sha256") != served_sha256:
        source["left_out"] = "measured on another checkpoint than the served one"
    elif not metrics.get("held_out_bits_per_byte"):
        source["left_out"] = "no held-out bits/byte (the corpus was not available to the export)"
    return source


def local_source(entry: dict | None, local_file: str, served_sha256: str, window: int) -> dict | None:
    """What the stored convergence rows measured, or None when none are stored for the model."""
    if not entry:
        return None
    positions = read_local(entry)["positions"]
    per_window = window - 1  # a window's first byte is context only
    source = {
        "file": local_file,
        "run": entry.get("run"),
        "positions": positions,
        "windows": positions // per_window if per_window and positions % per_window == 0 else None,
        "window": window,
    }
    if f":{served_sha256[:12]}:" not in (entry.get("run") or ""):
        source["left_out"] = "measured on another checkpoint than the served one"
    return source


# --- the card's table, halting rows and named figures ---------------------------------------------------------------


def _depth_series(mapping: dict | None) -> dict[int, float]:
    return {int(d): v for d, v in sorted((mapping or {}).items(), key=lambda kv: int(kv[0])) if v is not None}


EXPLICIT_NOT_APPLICABLE = (
    "An explicit transformer has one depth, its layer count ({depth}), and applies each layer once: there is no "
    "fixed point, so residuals, converged shares, adaptive halting and other starts do not apply to it."
)


def by_depth_table(export: dict[int, float], local: dict, sources: dict, explicit: bool = False) -> dict:
    """The card's figures by depth: one row per measured series, a cell per depth of CARD_DEPTHS (None where the
    series has no value there); an explicit transformer's one depth is a column whether or not CARD_DEPTHS has it."""
    rows = []
    if export:
        rows.append(
            {
                "key": "export.bits_per_byte",
                "label": "bits/byte, one pass through its layers, whole held-out slice (ONNX export)"
                if explicit
                else "bits/byte, Picard, whole held-out slice (ONNX export)",
                "unit": "bits/byte",
                "source": "export",
                "series": export,
            }
        )
    windows = (sources.get("local") or {}).get("windows")
    where = f"{windows} held-out windows" if windows else "held-out windows"
    for solver, cells in local.items():
        rows.append(
            {
                "key": f"{solver}.bits_per_byte",
                "label": f"bits/byte, {solver.title()}, {where}",
                "unit": "bits/byte",
                "source": "local",
                "series": {d: c["bits_per_byte"] for d, c in cells.items() if c.get("bits_per_byte") is not None},
            }
        )
        rows.append(
            {
                "key": f"{solver}.converged",
                "label": f"positions with relative residual < {CARD_TOL:g}, {solver.title()}, {where}",
                "unit": "fraction",
                "source": "local",
                "series": {d: c["converged"][CARD_TOL] for d, c in cells.items() if CARD_TOL in c["converged"]},
            }
        )
    shown = sorted({*CARD_DEPTHS, *export}) if explicit else CARD_DEPTHS
    depths = [d for d in shown if any(d in row["series"] for row in rows)]
    for row in rows:
        series = row.pop("series")
        row["values"] = [_round(series.get(d)) for d in depths]
    return {"depths": depths, "rows": rows}


def _text(kind: str, value) -> str:
    if kind == "fraction":
        return f"{value:.1%}"
    if kind == "bits/byte":
        return f"{value:.3f}"
    if kind == "difference":
        return f"{value:+.3f}"
    if kind == "iterations":
        return f"{value:.1f}"
    return f"{value:g}"


def named_figures(export: dict[int, float], local: dict, halting: list[dict], warm: dict | None) -> dict:
    """Every figure a card's prose may name: {name: {"value", "text", "source"}}.

    bpb.export@d: bits/byte at depth d on the whole held-out slice; bpb.<solver>@d and converged.<solver>@d: on the
    held-out windows (the converged share at CARD_TOL); best.<series>, best_depth.<series>, deepest.<series> and
    drift.<series> (bits/byte at the deepest depth minus the best) for the series export, picard and anderson (a
    series of one depth has none of these four); an explicit transformer also has `layers`, its layer count;
    halting.<solver>.{iterations, bpb, converged, gain}: adaptive halting at CARD_TOL with the largest cap, gain being
    fixed depth cap's bits/byte minus halting's (positive: halting is better); halting.cap; tol; warm.{iterations_saved,
    agreement, cap}: the stored warm-start decoding row.
    """
    figures: dict[str, dict] = {}

    def put(name: str, value, kind: str, source: str) -> None:
        if value is not None:  # the text is printed from the measured value, not from its rounded copy
            text = _text(kind, int(value) if kind == "count" else value)
            figures[name] = {"value": int(value) if kind == "count" else _round(value), "text": text, "source": source}

    series = {"export": export} if export else {}
    for solver, cells in local.items():
        series[solver] = {d: c["bits_per_byte"] for d, c in cells.items() if c.get("bits_per_byte") is not None}
    for name, curve in series.items():
        if not curve:
            continue
        source = "export" if name == "export" else "local"
        depths = curve if name == "export" else [d for d in CARD_DEPTHS if d in curve]
        for depth in depths:
            put(f"bpb.{name}@{depth}", curve[depth], "bits/byte", source)
        if len(curve) < 2:  # one depth (an explicit transformer's): no best depth, no drift to speak of
            continue
        best_depth = min(curve, key=lambda d: (curve[d], d))
        deepest = max(curve)
        put(f"best.{name}", curve[best_depth], "bits/byte", source)
        put(f"best_depth.{name}", best_depth, "count", source)
        put(f"deepest.{name}", deepest, "count", source)
        put(f"drift.{name}", curve[deepest] - curve[best_depth], "difference", source)
    for solver, cells in local.items():
        for depth in CARD_DEPTHS:
            put(
                f"converged.{solver}@{depth}",
                cells.get(depth, {}).get("converged", {}).get(CARD_TOL),
                "fraction",
                "local",
            )
    if local or halting:
        put("tol", CARD_TOL, "tolerance", "local")
    points = [p for p in halting if p["tol"] == CARD_TOL]
    if points:
        cap = max(p["cap"] for p in points)
        put("halting.cap", cap, "count", "local")
        for point in (p for p in points if p["cap"] == cap):
            name, fixed = f"halting.{point['solver']}", series.get(point["solver"], {}).get(cap)
            put(f"{name}.iterations", point.get("mean_iterations"), "iterations", "local")
            put(f"{name}.bpb", point.get("bits_per_byte"), "bits/byte", "local")
            put(f"{name}.converged", point.get("converged"), "fraction", "local")
            if fixed is not None and point.get("bits_per_byte") is not None:
                put(f"{name}.gain", fixed - point["bits_per_byte"], "bits/byte", "local")
    if warm:
        if warm.get("iteration_change") is not None:
            put("warm.iterations_saved", -warm["iteration_change"], "fraction", "export")
        put("warm.agreement", warm.get("greedy_token_agreement"), "fraction", "export")
        put("warm.cap", warm.get("cap"), "count", "export")
    return figures


def build_evaluation(
    served_sha256: str,
    window: int,
    metrics: dict,
    metrics_file: str,
    local_entry: dict | None,
    local_file: str,
) -> dict:
    """The card's evaluation facts beyond the training loop's check: sources, figures by depth, halting rows and the
    named figures its prose may quote."""
    sources = {
        "export": export_source(metrics, metrics_file, served_sha256),
        "local": local_source(local_entry, local_file, served_sha256, window),
    }
    export_ok = sources["export"] is not None and "left_out" not in sources["export"]
    local_ok = sources["local"] is not None and "left_out" not in sources["local"]
    export = _depth_series(metrics.get("held_out_bits_per_byte")) if export_ok else {}
    parsed = read_local(local_entry) if local_ok else {"by_depth": {}, "halting": []}
    local = parsed["by_depth"]
    halting = []
    for point in parsed["halting"]:
        fixed = local.get(point["solver"], {}).get(point["cap"], {}).get("bits_per_byte")
        halting.append(
            {
                "solver": point["solver"],
                "tol": point["tol"],
                "cap": point["cap"],
                "mean_iterations": _round(point.get("mean_iterations")),
                "bits_per_byte": _round(point.get("bits_per_byte")),
                "converged": _round(point.get("converged")),
                "fixed_cap_bits_per_byte": _round(fixed),
            }
        )
    warm = metrics.get("warm_start_decoding") if export_ok else None
    explicit = metrics.get("model_class") == "ExplicitLM"
    out = {
        "sources": sources,
        "by_depth": by_depth_table(export, local, sources, explicit),
        "halting": halting,
        "figures": named_figures(export, local, parsed["halting"], warm),
    }
    if explicit:  # its depth is its layer count: the one structural figure its prose may name ({layers})
        layers = int((metrics.get("config") or {})["n_layers"])
        out["figures"]["layers"] = {"value": layers, "text": str(layers), "source": "export"}
        out["not_applicable"] = EXPLICIT_NOT_APPLICABLE.format(depth=layers)
    return out


# --- prose that names figures ---------------------------------------------------------------------------------------


def split_prose(text: str) -> list[str | tuple[str | None, str]]:
    """Prose cut into its literal text and its figure references, in order: a str, or (model id or None, name)."""
    parts: list[str | tuple[str | None, str]] = []
    at = 0
    for match in FIGURE_REF.finditer(text):
        if match.start() > at:
            parts.append(text[at : match.start()])
        parts.append((match["model"], match["name"]))
        at = match.end()
    if at < len(text):
        parts.append(text[at:])
    return parts
