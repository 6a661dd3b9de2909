"""One sentence for each node of a criterion (experiments_app.criterion), as pages and verdicts show it."""

from __future__ import annotations

__all__ = ["describe", "describe_selector"]


def describe_selector(sel: dict) -> str:
    where = ", ".join(f"{k} {v}" for k, v in sorted(sel["where"].items()))
    source = f"{sel['experiment']}:" if sel.get("experiment") else ""
    return f"{source}{sel['arm']}'s {sel['metric']}" + (f" ({where})" if where else "")


def _describe_test(node: dict) -> str:
    stat = {
        "mean": "the mean over seeds",
        "ci_low": "the 95% interval's lower bound",
        "ci_high": "the 95% interval's upper bound",
        "min": "the lowest seed's figure",
        "max": "the highest seed's figure",
    }[node["stat"]]
    return f"{stat} {node['cmp']} {node['value']:g}"


def describe(node: dict) -> str:
    """One sentence for a node (its parts are described on their own)."""
    op = node["op"]
    if op == "all":
        return f"all of these {len(node['of'])} conditions hold"
    if op == "any":
        return f"at least one of these {len(node['of'])} conditions holds"
    if op == "every_seed":
        return "for every seed on its own: " + describe(node["of"])
    if op == "ratio":
        head = f"{describe_selector(node['of'])} over {describe_selector(node['over'])}, per seed"
    elif op == "difference":
        head = f"{describe_selector(node['of'])} minus {describe_selector(node['minus'])}, per seed"
        if node.get("abs"):
            head += " (each seed's gap in absolute value)"
    elif op == "value":
        head = describe_selector(node["of"])
    else:
        upto = f" up to depth {node['to_depth']}" if node.get("to_depth") else ""
        best = "lowest" if node["better"] == "lower" else "highest"
        head = {
            "at": f"{describe_selector(node['of'])} at depth {node.get('depth')}",
            "best": f"the {best} {describe_selector(node['of'])} over depth{upto}",
            "gap_at": f"{describe_selector(node['of'])} at depth {node.get('depth')} minus its best depth's{upto}",
            "excess": f"the largest excess of {describe_selector(node['of'])} over its best depth's, from the best "
            f"depth{upto or ' on'}",
        }[node["measure"]]
    return f"{head}: {_describe_test(node)}"
